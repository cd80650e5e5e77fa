//! PostgreSQL's notices, logged at their weight. The server sends one for
//! every `CREATE … IF NOT EXISTS` that finds its object (the schema table
//! and the log partitions, at every start); tokio-postgres would log each
//! at info, so an operator would learn to skip lines that matter. Notices
//! go to debug; only warnings (and worse) stay warnings.

use futures_util::future::poll_fn;
use tokio_postgres::error::{DbError, Severity};
use tokio_postgres::AsyncMessage;

use super::Connection;

/// Drives a connection whose notifications nobody reads (reads, the
/// writer, migrations) until it closes, logging its notices; in place of
/// awaiting the connection itself.
pub(crate) async fn drive(mut conn: Connection) -> Result<(), tokio_postgres::Error> {
    loop {
        match poll_fn(|cx| conn.poll_message(cx)).await {
            Some(Ok(AsyncMessage::Notice(notice))) => log(&notice),
            // Notifications: only the listener LISTENs, and reads its own.
            Some(Ok(_)) => {}
            Some(Err(e)) => return Err(e),
            None => return Ok(()),
        }
    }
}

/// Whether a notice of this severity is worth an operator's attention.
fn is_warning(severity: Option<Severity>) -> bool {
    match severity {
        Some(Severity::Warning | Severity::Error | Severity::Fatal | Severity::Panic) => true,
        Some(Severity::Notice | Severity::Info | Severity::Log | Severity::Debug) | None => false,
    }
}

/// Logs one notice: a warning at warn, anything else at debug.
pub(crate) fn log(notice: &DbError) {
    if is_warning(notice.parsed_severity()) {
        tracing::warn!(
            code = notice.code().code(),
            "PostgreSQL: {}",
            notice.message()
        );
    } else {
        tracing::debug!(
            severity = notice.severity(),
            "PostgreSQL: {}",
            notice.message()
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_warnings_and_worse_are_warnings() {
        assert!(is_warning(Some(Severity::Warning)));
        assert!(is_warning(Some(Severity::Error)));
        assert!(!is_warning(Some(Severity::Notice)));
        assert!(!is_warning(Some(Severity::Info)));
        assert!(!is_warning(None));
    }
}
