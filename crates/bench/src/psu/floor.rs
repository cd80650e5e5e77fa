//! The floor of `psu`'s execution: the same scripts, as many at once,
//! run by the bench itself with each one's output read from a pipe and
//! discarded, so that joblog's cost per job is a measured difference
//! (its execution median minus this one), not a guess.

use std::process::Stdio;
use std::time::Instant;

use anyhow::Context as _;
use tokio::io::{AsyncRead, AsyncReadExt};

/// Runs `batches` batches of `jobs` concurrent `sh -c script` (as joblog
/// runs a job's script, `JOBLOG_JOB_ID` set) and returns each one's time
/// in ms, from its spawn to its exit with both pipes read to their end.
pub(super) async fn run(script: &str, jobs: u32, batches: u32) -> anyhow::Result<Vec<f64>> {
    let mut times = Vec::with_capacity((jobs * batches) as usize);
    for batch in 0..batches {
        let runs = (0..jobs).map(|i| one(script, u64::from(batch * jobs + i + 1)));
        for took in futures_util::future::join_all(runs).await {
            times.push(took?);
        }
    }
    Ok(times)
}

async fn one(script: &str, id: u64) -> anyhow::Result<f64> {
    let t = Instant::now();
    let mut child = tokio::process::Command::new("sh")
        .arg("-c")
        .arg(script)
        .env("JOBLOG_JOB_ID", id.to_string())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .context("psu floor: cannot run sh")?;
    let (out, err) = (child.stdout.take(), child.stderr.take());
    let (lines, _) = tokio::try_join!(discard(out), discard(err))?;
    let status = child.wait().await?;
    anyhow::ensure!(
        status.success() && lines > 0,
        "psu floor: the script ended {status} after {lines} lines"
    );
    Ok(t.elapsed().as_secs_f64() * 1000.0)
}

/// Reads a pipe to its end; the lines it held.
async fn discard(pipe: Option<impl AsyncRead + Unpin>) -> anyhow::Result<usize> {
    let Some(mut pipe) = pipe else {
        return Ok(0);
    };
    let mut buf = vec![0u8; 64 * 1024];
    let mut lines = 0;
    loop {
        let n = pipe.read(&mut buf).await?;
        if n == 0 {
            return Ok(lines);
        }
        lines += buf[..n].iter().filter(|b| **b == b'\n').count();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_floor_runs_every_script_to_its_end() {
        let times = run(&super::super::script(50), 3, 2).await.unwrap();
        assert_eq!(times.len(), 6);
        assert!(times.iter().all(|t| *t > 0.0), "{times:?}");
        let failing = run("exit 3", 1, 1).await.unwrap_err();
        assert!(failing.to_string().contains("ended"), "{failing}");
    }
}
