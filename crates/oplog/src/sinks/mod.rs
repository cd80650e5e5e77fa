//! The sinks: files with rotation ([`file`], [`rotation`]), stdout and
//! stderr ([`stream`]), syslog ([`syslog`]), the database ([`database`]). Each runs on its writer's
//! own thread, may block there, never panics, and fails with an
//! `io::Error` that names its file or address.

pub mod clock;
pub mod database;
pub mod file;
pub mod rotation;
pub mod stream;
pub mod syslog;

pub use clock::{Clock, ManualClock, SystemClock};
pub use file::FileSink;
pub use rotation::{Compression, Rotation};
pub use stream::StreamSink;
pub use syslog::{Facility, SyslogSink, SyslogTarget};
