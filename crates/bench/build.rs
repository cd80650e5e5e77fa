//! Records the commit the benchmarks are built from, for `joblog bench`'s
//! reports (`JOBLOG_BUILD_COMMIT`): a figure is only worth comparing with
//! the code that measured it. "unknown" outside a git checkout.

use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    if !out.status.success() {
        return None;
    }
    Some(String::from_utf8(out.stdout).ok()?.trim().to_string())
}

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=JOBLOG_BUILD_COMMIT");
    let commit = std::env::var("JOBLOG_BUILD_COMMIT")
        .ok()
        .filter(|c| !c.is_empty())
        .or_else(|| git(&["rev-parse", "--short=7", "HEAD"]))
        .unwrap_or_else(|| "unknown".to_string());
    // Built again when HEAD moves: HEAD itself (a checkout), the branch it
    // names (a commit) and packed refs.
    // (Only files that exist: cargo runs a script watching a missing file
    // on every build.)
    let mut watch = Vec::new();
    if let Some(dir) = git(&["rev-parse", "--absolute-git-dir"]) {
        watch.push(format!("{dir}/HEAD"));
    }
    if let (Some(branch), Some(common)) = (
        git(&["symbolic-ref", "-q", "HEAD"]),
        git(&["rev-parse", "--path-format=absolute", "--git-common-dir"]),
    ) {
        watch.push(format!("{common}/{branch}"));
        watch.push(format!("{common}/packed-refs"));
    }
    for path in watch.iter().filter(|p| std::path::Path::new(p).exists()) {
        println!("cargo:rerun-if-changed={path}");
    }
    println!("cargo:rustc-env=JOBLOG_BUILD_COMMIT={commit}");
}
