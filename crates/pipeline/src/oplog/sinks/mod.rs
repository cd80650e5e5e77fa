//! The sinks: files with rotation, stdout/stderr, syslog.
