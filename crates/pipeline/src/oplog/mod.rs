//! The server's own logs (issue 11, in progress): structured events from
//! any thread handed to background sinks, none of it on the caller's
//! thread but a push onto a bounded queue.
//!
//! Today this holds the queue each sink will read ([`queue`]); the events,
//! operation units, routing and sinks come next.

pub mod queue;
