//! Waiting for what comes in its own time (a job to finish, a file to
//! appear, a server to answer): one polling loop for every suite, in place
//! of a deadline loop written out in each test. A wait fails only when its
//! patience runs out, saying what it waited for and for how long; there is
//! no timed assertion, so a pass takes as long as the condition does.

use std::fmt::Display;
use std::future::Future;
use std::time::{Duration, Instant};

/// How long a test waits for what should come soon before it gives up.
/// Generous, so that a loaded machine does not fail a test: only a failure
/// waits this long.
pub const PATIENCE: Duration = Duration::from_secs(60);

/// The first pause between two looks: short, so a condition that is nearly
/// there (a scheduler a step behind a manual clock) costs little.
const FIRST_PAUSE: Duration = Duration::from_millis(5);

/// The longest pause: the pace of the suites' old loops, so a slow
/// condition does not load what is polled (a server under a test's load).
const LONGEST_PAUSE: Duration = Duration::from_millis(50);

/// What one look at a condition found: the value waited for, or not yet.
///
/// `Option<T>`: `None` is not yet. `Result<T, E>`: `Err(seen)` is not yet,
/// and the last `seen` is shown if the patience runs out (the job's state,
/// the entries found so far), as the suites' old loops showed it.
pub trait Outcome {
    type Value;

    /// `Ok` once the condition holds; else what was seen, if anything.
    fn settled(self) -> Result<Self::Value, Option<String>>;
}

impl<T> Outcome for Option<T> {
    type Value = T;

    fn settled(self) -> Result<T, Option<String>> {
        self.ok_or(None)
    }
}

impl<T, E: Display> Outcome for Result<T, E> {
    type Value = T;

    fn settled(self) -> Result<T, Option<String>> {
        self.map_err(|seen| Some(seen.to_string()))
    }
}

/// Looks at `check` until it gives the value, for at most `patience`;
/// panics saying `what` was waited for otherwise. `check` may assert too:
/// what must hold at every look (a status, a secret never shown).
pub async fn eventually<O, F, Fut>(what: &str, patience: Duration, mut check: F) -> O::Value
where
    O: Outcome,
    F: FnMut() -> Fut,
    Fut: Future<Output = O>,
{
    let mut pace = Pace::new(patience);
    loop {
        let seen = match check().await.settled() {
            Ok(value) => return value,
            Err(seen) => seen,
        };
        match pace.next_pause() {
            Some(pause) => tokio::time::sleep(pause).await,
            None => give_up(what, patience, seen),
        }
    }
}

/// [`eventually`] for a test without a runtime, or one that waits on a
/// process and must not yield (it sleeps the thread between looks).
#[track_caller]
pub fn eventually_blocking<O: Outcome>(
    what: &str,
    patience: Duration,
    mut check: impl FnMut() -> O,
) -> O::Value {
    let mut pace = Pace::new(patience);
    loop {
        let seen = match check().settled() {
            Ok(value) => return value,
            Err(seen) => seen,
        };
        match pace.next_pause() {
            Some(pause) => std::thread::sleep(pause),
            None => give_up(what, patience, seen),
        }
    }
}

/// Looks at `check` until it gives a value, for at most `patience`, and
/// gives `None` when it never did: for a test whose wait running out is an
/// answer, not a failure (a server that should refuse to start and is
/// still running is killed and reported by the test).
pub fn within_blocking<T>(patience: Duration, mut check: impl FnMut() -> Option<T>) -> Option<T> {
    let mut pace = Pace::new(patience);
    loop {
        if let Some(value) = check() {
            return Some(value);
        }
        std::thread::sleep(pace.next_pause()?);
    }
}

/// When to look again: pauses from [`FIRST_PAUSE`] doubling up to
/// [`LONGEST_PAUSE`], until the patience is spent.
struct Pace {
    deadline: Instant,
    pause: Duration,
}

impl Pace {
    fn new(patience: Duration) -> Pace {
        Pace {
            deadline: Instant::now() + patience,
            pause: FIRST_PAUSE,
        }
    }

    /// The pause before the next look, or `None` once the patience is
    /// spent (after at least one look, however short the patience).
    fn next_pause(&mut self) -> Option<Duration> {
        if Instant::now() >= self.deadline {
            return None;
        }
        let pause = self.pause;
        self.pause = (pause * 2).min(LONGEST_PAUSE);
        Some(pause)
    }
}

#[track_caller]
fn give_up(what: &str, patience: Duration, seen: Option<String>) -> ! {
    match seen {
        Some(seen) => panic!("waited {patience:?} for {what}; last seen: {seen}"),
        None => panic!("waited {patience:?} for {what}"),
    }
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;
    use std::time::Duration;

    use super::{eventually, eventually_blocking, within_blocking};

    const SHORT: Duration = Duration::from_millis(200);

    #[tokio::test]
    async fn eventually_gives_the_value_once_the_check_holds() {
        let looks = Cell::new(0);
        let value = eventually("the third look", SHORT * 10, || {
            looks.set(looks.get() + 1);
            let n = looks.get();
            async move { (n == 3).then_some(n * 10) }
        })
        .await;
        assert_eq!((value, looks.get()), (30, 3));
    }

    #[tokio::test]
    #[should_panic(expected = "waited 200ms for a condition that never holds")]
    async fn eventually_names_what_it_waited_for_when_its_patience_runs_out() {
        eventually("a condition that never holds", SHORT, || async {
            None::<()>
        })
        .await;
    }

    #[tokio::test]
    #[should_panic(expected = "waited 200ms for a job to finish; last seen: running")]
    async fn eventually_shows_what_it_saw_last() {
        eventually("a job to finish", SHORT, || async {
            Err::<(), _>("running")
        })
        .await;
    }

    #[test]
    fn eventually_blocking_gives_the_value_once_the_check_holds() {
        let mut looks = 0;
        let value = eventually_blocking("the second look", SHORT * 10, || {
            looks += 1;
            (looks == 2).then_some("ready")
        });
        assert_eq!((value, looks), ("ready", 2));
    }

    #[test]
    #[should_panic(expected = "waited 200ms for a file that never comes; last seen: no file")]
    fn eventually_blocking_fails_like_eventually() {
        eventually_blocking("a file that never comes", SHORT, || Err::<(), _>("no file"));
    }

    #[test]
    fn within_blocking_gives_none_when_the_patience_runs_out() {
        let started = std::time::Instant::now();
        assert_eq!(within_blocking(SHORT, || None::<()>), None);
        assert!(started.elapsed() >= SHORT);
        assert_eq!(within_blocking(SHORT, || Some(4)), Some(4));
    }
}
