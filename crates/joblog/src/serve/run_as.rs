//! `jobs.run_as`: every job runs as another user than the server's. At
//! start the user is looked up, the server's right to switch to it is
//! checked (root, or the capabilities it needs), and each of the server's
//! own files — data directory, database, logs, token file, a
//! configuration file holding a secret — must be closed to that user:
//! the server refuses to start otherwise, naming the file and the fix.

use std::os::unix::fs::MetadataExt;
use std::path::Path;

use anyhow::{bail, Context};
use joblog_engine::RunAs;
use nix::unistd::{Gid, Group, User};

/// Capabilities the server needs to run jobs as another user: switch to
/// it (SETUID, SETGID) and signal its processes (KILL). Bit numbers of
/// linux/capability.h. Root has them, except in some containers.
const NEEDED_CAPS: [(u32, &str); 3] = [(5, "CAP_KILL"), (6, "CAP_SETGID"), (7, "CAP_SETUID")];
/// Reading another user's `/proc/<pid>/environ`: without it, a job's
/// process that left its group cannot be told by its marks, so it is not
/// stopped with its job (a container's root lacks it by default).
const CAP_SYS_PTRACE: u32 = 19;

/// The user `name` (or a numeric uid) with its group and supplementary
/// groups.
pub(super) fn look_up(name: &str) -> anyhow::Result<RunAs> {
    let shown = crate::config::value::shown(name);
    let user = match name.parse::<u32>() {
        Ok(uid) => User::from_uid(nix::unistd::Uid::from_raw(uid)),
        Err(_) => User::from_name(name),
    }
    .with_context(|| format!("jobs.run_as: cannot look up the user {shown}"))?
    .with_context(|| format!("jobs.run_as: there is no user {shown} on this host"))?;
    if user.uid.is_root() {
        bail!("jobs.run_as: {shown} is root; name an unprivileged user of its own for jobs");
    }
    let groups = supplementary_groups(&user)?;
    Ok(RunAs {
        name: user.name,
        uid: user.uid.as_raw(),
        gid: user.gid.as_raw(),
        groups,
        home: user.dir,
    })
}

fn supplementary_groups(user: &User) -> anyhow::Result<Vec<u32>> {
    let name = std::ffi::CString::new(user.name.as_bytes())
        .with_context(|| format!("jobs.run_as: the user name {:?} holds a NUL", user.name))?;
    let groups = nix::unistd::getgrouplist(&name, user.gid)
        .with_context(|| format!("jobs.run_as: cannot read the groups of {:?}", user.name))?;
    Ok(groups.into_iter().map(Gid::as_raw).collect())
}

/// Refuses to start unless the server may switch to `user` and none of
/// `kept` (the server's own files, those that exist) is open to it.
pub(super) fn check(user: &RunAs, kept: &[&Path]) -> anyhow::Result<()> {
    let me = nix::unistd::geteuid();
    if me.as_raw() == user.uid {
        bail!(
            "jobs.run_as: {:?} is the server's own user; jobs must run as another user, who cannot read the server's files",
            user.name
        );
    }
    let caps = effective_capabilities()?;
    let missing: Vec<&str> = NEEDED_CAPS
        .iter()
        .filter(|(bit, _)| caps & (1 << bit) == 0)
        .map(|(_, name)| *name)
        .collect();
    if !missing.is_empty() {
        bail!(
            "jobs.run_as: the server lacks {} to run jobs as {:?}: start it as root, or give it those capabilities (the systemd unit of docs/production.md does)",
            missing.join(", "),
            user.name
        );
    }
    if caps & (1 << CAP_SYS_PTRACE) == 0 {
        tracing::warn!(
            "jobs.run_as: the server lacks CAP_SYS_PTRACE, so it cannot read the marks of a job's processes that left its process group (daemons): those are not stopped when their job ends; give it CAP_SYS_PTRACE (`docker run --cap-add SYS_PTRACE`)"
        );
    }
    for path in kept {
        let Ok(meta) = std::fs::metadata(path) else {
            continue;
        };
        if let Some(access) = open_to(user, &meta) {
            let group = Group::from_gid(Gid::from_raw(meta.gid()))
                .ok()
                .flatten()
                .map_or_else(|| meta.gid().to_string(), |g| g.name);
            bail!(
                "jobs.run_as: {} (mode {:04o}, group {group}) is {access} by {:?}, the user jobs run as: they could read the server's secrets and every job's output; `chmod o=,g= {}` (or give it a group that user is not in)",
                path.display(),
                meta.mode() & 0o7777,
                user.name,
                path.display()
            );
        }
    }
    Ok(())
}

/// Whether a configuration file sets a secret (`token`, `database` and
/// `notify.smtp_url` may carry a password, `auth.oidc.client_secret` is
/// one): `config::layers::SECRETS`.
pub(super) fn holds_secret(path: &Path) -> bool {
    let Some(table) = std::fs::read_to_string(path)
        .ok()
        .and_then(|text| text.parse::<toml::Table>().ok())
    else {
        return false;
    };
    crate::config::layers::SECRETS.iter().any(|key| {
        let mut parts = key.split('.');
        let first = parts.next().and_then(|k| table.get(k));
        parts
            .try_fold(first, |v, k| Some(v?.as_table()?.get(k)))
            .flatten()
            .is_some()
    })
}

/// How `user` may use a file with `meta`, by its mode bits (owner, then
/// group, then others; ACLs are not read): `None` when not at all.
fn open_to(user: &RunAs, meta: &std::fs::Metadata) -> Option<&'static str> {
    let mode = meta.mode();
    let bits = if meta.uid() == user.uid {
        (mode >> 6) & 7
    } else if meta.gid() == user.gid || user.groups.contains(&meta.gid()) {
        (mode >> 3) & 7
    } else {
        mode & 7
    };
    match (bits & 4 != 0, bits & 2 != 0, bits & 1 != 0) {
        (true, _, _) => Some("readable"),
        (_, true, _) => Some("writable"),
        (_, _, true) if meta.is_dir() => Some("open (enterable)"),
        _ => None,
    }
}

/// This process's effective capabilities (`CapEff` of
/// `/proc/self/status`), as bits.
fn effective_capabilities() -> anyhow::Result<u64> {
    let status =
        std::fs::read_to_string("/proc/self/status").context("reading /proc/self/status")?;
    Ok(status
        .lines()
        .find_map(|l| l.strip_prefix("CapEff:"))
        .and_then(|hex| u64::from_str_radix(hex.trim(), 16).ok())
        .unwrap_or(0))
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    fn user() -> RunAs {
        RunAs {
            name: "jobs".into(),
            uid: 4242,
            gid: 4242,
            groups: vec![4242],
            home: "/".into(),
        }
    }

    #[test]
    fn a_file_is_open_to_the_job_user_by_its_other_bits() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("admin.token");
        std::fs::write(&file, "x").unwrap();
        // Owned by this test's user, whose group the job user is not in.
        for (mode, open) in [
            (0o600, None),
            (0o640, None),
            (0o604, Some("readable")),
            (0o602, Some("writable")),
        ] {
            std::fs::set_permissions(&file, std::fs::Permissions::from_mode(mode)).unwrap();
            let meta = std::fs::metadata(&file).unwrap();
            assert_eq!(open_to(&user(), &meta), open, "{mode:o}");
        }
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o701)).unwrap();
        let meta = std::fs::metadata(dir.path()).unwrap();
        assert_eq!(open_to(&user(), &meta), Some("open (enterable)"));
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
        let meta = std::fs::metadata(dir.path()).unwrap();
        assert_eq!(open_to(&user(), &meta), None);
        let member = RunAs {
            groups: vec![4242, meta.gid()],
            ..user()
        };
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o750)).unwrap();
        let meta = std::fs::metadata(dir.path()).unwrap();
        assert_eq!(open_to(&member, &meta), Some("readable"), "by its group");
    }

    #[test]
    fn root_and_unknown_users_are_refused() {
        assert!(look_up("root").unwrap_err().to_string().contains("is root"));
        assert!(look_up("no-such-user-joblog")
            .unwrap_err()
            .to_string()
            .contains("there is no user"));
        // A `'''` left open in the file takes the token's line as the name.
        let swallowed = look_up("token = \"hunter2-secret\"\nlisten = ").unwrap_err();
        let text = format!("{swallowed:#}");
        assert!(
            !text.contains("hunter2") && text.contains("2 lines"),
            "{text}"
        );
        let nobody = look_up("nobody").unwrap();
        assert_eq!(nobody.uid, 65534);
    }
}
