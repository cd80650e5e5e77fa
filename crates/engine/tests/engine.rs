//! The engine's own tests: a node of a real SQLite store in a temporary
//! directory, the real pipeline and its writer thread, real `sh`
//! processes, and a clock the test moves by hand (`harness`).

#[path = "engine/harness.rs"]
mod harness;
#[path = "engine/retries.rs"]
mod retries;
