//! The server's own logs (issue 11, in progress): structured events from
//! any thread handed to background sinks, none of it on the caller's
//! thread but a push onto a bounded queue.
//!
//! [`queue`] is the bounded queue each sink reads; [`entry`] the lines
//! sinks write, [`format`] how they look, [`sink`] what a sink is, and
//! [`sinks`] the sinks themselves.

pub mod entry;
pub mod format;
pub mod queue;
pub mod sink;
pub mod sinks;

pub use entry::{Entry, Level, Log};
pub use format::Format;
pub use sink::Sink;
