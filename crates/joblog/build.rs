//! Names the commit the binary is built from, for `joblog --version`.
//!
//! From `JOBLOG_COMMIT` when the builder sets it (a container or package
//! build without the repository's `.git`), else from `git rev-parse`;
//! `unknown` when neither answers, never a failed build.

use std::path::Path;
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-env-changed=JOBLOG_COMMIT");
    let commit = std::env::var("JOBLOG_COMMIT")
        .ok()
        .filter(|c| !c.trim().is_empty())
        .or_else(from_git)
        .unwrap_or_else(|| "unknown".to_string());
    println!("cargo:rustc-env=JOBLOG_COMMIT={}", commit.trim());
}

/// The checked-out commit, 12 hex digits; asks Cargo to build again when
/// HEAD moves (a commit, a checkout).
fn from_git() -> Option<String> {
    let git = |args: &[&str]| -> Option<String> {
        let out = Command::new("git").args(args).output().ok()?;
        out.status
            .success()
            .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
    };
    let commit = git(&["rev-parse", "--short=12", "HEAD"])?;
    if let Some(dir) = git(&["rev-parse", "--absolute-git-dir"]) {
        let dir = Path::new(&dir);
        let branch = git(&["symbolic-ref", "-q", "HEAD"]);
        let watched = ["HEAD", "packed-refs"].into_iter().map(|f| dir.join(f));
        // Only files that exist: Cargo reruns a script every build for a
        // missing one.
        for file in watched.chain(branch.map(|b| dir.join(b))) {
            if file.exists() {
                println!("cargo:rerun-if-changed={}", file.display());
            }
        }
    }
    Some(commit)
}
