//! A PostgreSQL server of a test's own (initdb + pg_ctl in a temp dir, on a
//! free port), for what the shared test server must not be put through:
//! being stopped and started, or configured for TLS only.

use std::path::{Path, PathBuf};
use std::process::Command;

use tempfile::TempDir;

/// A private PostgreSQL cluster, stopped (immediately) on drop.
pub struct PrivateCluster {
    bin: PathBuf,
    data: PathBuf,
    port: u16,
    options: Vec<(String, String)>,
    _dir: TempDir,
}

impl PrivateCluster {
    /// A new cluster, initialised but not started: files and options may be
    /// set before [`pg_ctl`](Self::pg_ctl)`("start")`. Trust authentication,
    /// superuser `postgres`, listening on 127.0.0.1 only.
    ///
    /// Panics without PostgreSQL's server binaries (Debian: postgresql-15);
    /// callers skip first when `JOBLOG_TEST_POSTGRES_URL` is unset, since
    /// that variable vouches for them.
    pub fn init() -> PrivateCluster {
        let cluster = Self::unmade(bin_dir());
        let out = cluster
            .command("initdb")
            .args(["-A", "trust", "-U", "postgres", "--no-sync", "-D"])
            .arg(&cluster.data)
            .output()
            .expect("running initdb");
        assert!(out.status.success(), "initdb: {out:?}");
        cluster
    }

    /// A streaming standby of `primary`, started: a base backup of it
    /// (`pg_basebackup -R`), replicating as `name` (the name
    /// `synchronous_standby_names` on the primary gives).
    pub fn standby_of(primary: &PrivateCluster, name: &str) -> PrivateCluster {
        let cluster = Self::unmade(primary.bin.clone());
        let out = cluster
            .command("pg_basebackup")
            .args(["-h", "127.0.0.1", "-p", &primary.port.to_string()])
            .args(["-U", "postgres", "-X", "stream", "-R", "--no-sync", "-D"])
            .arg(&cluster.data)
            .output()
            .expect("running pg_basebackup");
        assert!(out.status.success(), "pg_basebackup: {out:?}");
        // The last setting of the file wins over what -R wrote.
        let conninfo = format!(
            "\nprimary_conninfo = 'host=127.0.0.1 port={} user=postgres application_name={name}'\n",
            primary.port
        );
        let auto = cluster.data.join("postgresql.auto.conf");
        let mut text = std::fs::read_to_string(&auto).expect("postgresql.auto.conf");
        text.push_str(&conninfo);
        std::fs::write(&auto, text).expect("writing postgresql.auto.conf");
        cluster.pg_ctl("start");
        cluster
    }

    /// Makes a standby the primary (`pg_ctl promote`), waiting until it
    /// takes writes.
    pub fn promote(&self) {
        let out = self
            .command("pg_ctl")
            .args(["-w", "-D"])
            .arg(&self.data)
            .arg("promote")
            .output()
            .expect("running pg_ctl promote");
        assert!(out.status.success(), "pg_ctl promote: {out:?}");
    }

    /// Stops the server as a crash would (`pg_ctl stop -m immediate`):
    /// no checkpoint, clients cut.
    pub fn crash(&self) {
        let out = self
            .command("pg_ctl")
            .args(["-w", "-m", "immediate", "-D"])
            .arg(&self.data)
            .arg("stop")
            .output()
            .expect("running pg_ctl stop");
        assert!(out.status.success(), "pg_ctl stop -m immediate: {out:?}");
    }

    /// A cluster on a fresh directory (the server's, when run as root)
    /// and a free port, its data directory not made yet.
    fn unmade(bin: PathBuf) -> PrivateCluster {
        let dir = tempfile::tempdir().expect("a temp dir");
        if is_root() {
            chown_to_postgres(dir.path());
        }
        PrivateCluster {
            bin,
            data: dir.path().join("pgdata"),
            port: free_port(),
            options: Vec::new(),
            _dir: dir,
        }
    }

    /// A new cluster, started.
    pub fn start_new() -> PrivateCluster {
        let cluster = Self::init();
        cluster.pg_ctl("start");
        cluster
    }

    /// Writes `name` into the data directory, readable by the server only
    /// (as a private key must be); replaces `pg_hba.conf` if so named.
    pub fn write_file(&self, name: &str, contents: &[u8]) {
        use std::os::unix::fs::PermissionsExt as _;
        let path = self.data.join(name);
        std::fs::write(&path, contents).expect("writing into the cluster");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).expect("chmod 600");
        if is_root() {
            chown_to_postgres(&path);
        }
    }

    /// A server setting (`-c name=value`) for every later start.
    pub fn set(&mut self, name: &str, value: &str) {
        self.options.push((name.into(), value.into()));
    }

    /// `pg_ctl start` or `stop` (fast), waiting until done.
    pub fn pg_ctl(&self, action: &str) {
        let mut opts = format!(
            "-p {} -k {} -c listen_addresses=127.0.0.1 -c fsync=off",
            self.port,
            self.data.display()
        );
        for (name, value) in &self.options {
            opts.push_str(&format!(" -c {name}={value}"));
        }
        let log = self.data.join("server.log");
        let out = self
            .command("pg_ctl")
            .args(["-w", "-m", "fast", "-D"])
            .arg(&self.data)
            .arg("-o")
            .arg(opts)
            .arg("-l")
            .arg(&log)
            .arg(action)
            .output()
            .expect("running pg_ctl");
        let server_log = std::fs::read_to_string(&log).unwrap_or_default();
        assert!(
            out.status.success(),
            "pg_ctl {action}: {out:?}\n{server_log}"
        );
    }

    /// Runs `sql` as `postgres` over the Unix socket (which `pg_hba.conf`
    /// files of tests keep trusted), with psql.
    pub fn sql(&self, sql: &str) {
        let out = self
            .command("psql")
            .args([
                "-X",
                "-v",
                "ON_ERROR_STOP=1",
                "-U",
                "postgres",
                "-d",
                "postgres",
                "-h",
            ])
            .arg(&self.data)
            .args(["-p", &self.port.to_string(), "-c", sql])
            .output()
            .expect("running psql");
        assert!(out.status.success(), "psql {sql}: {out:?}");
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// `postgres://postgres@127.0.0.1:PORT/postgres`.
    pub fn url(&self) -> String {
        format!("postgres://postgres@127.0.0.1:{}/postgres", self.port)
    }

    /// As root, the server must run as the `postgres` user.
    fn command(&self, program: &str) -> Command {
        let path = self.bin.join(program);
        if is_root() {
            let mut c = Command::new("runuser");
            c.args(["-u", "postgres", "--"]).arg(path);
            c
        } else {
            Command::new(path)
        }
    }
}

impl Drop for PrivateCluster {
    fn drop(&mut self) {
        let _ = self
            .command("pg_ctl")
            .args(["-m", "immediate", "-D"])
            .arg(&self.data)
            .arg("stop")
            .output();
    }
}

fn bin_dir() -> PathBuf {
    let out = Command::new("pg_config").arg("--bindir").output();
    if let Ok(out) = out {
        let p = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
        if p.join("initdb").exists() {
            return p;
        }
    }
    let mut found: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .map(|d| {
            d.filter_map(|e| e.ok())
                .map(|e| e.path().join("bin"))
                .collect()
        })
        .unwrap_or_default();
    found.sort();
    found
        .pop()
        .filter(|p| p.join("initdb").exists())
        .expect("PostgreSQL's initdb and pg_ctl (Debian: postgresql-15) for a private test cluster")
}

fn chown_to_postgres(path: &Path) {
    let ok = Command::new("chown")
        .arg("postgres:postgres")
        .arg(path)
        .status()
        .is_ok_and(|s| s.success());
    assert!(ok, "chown postgres {}", path.display());
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
        .unwrap_or(false)
}

/// A port nobody listens on just now.
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}
