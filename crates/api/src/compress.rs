//! Response compression: gzip, br or zstd, as the client's
//! `Accept-Encoding` asks (a page of a log is mostly repeated text).
//!
//! Not compressed: event streams (an encoder holds bytes back until its
//! buffer fills, so a live event would wait for the next ones) and
//! backups (a SQLite file is sent with its length, which the client
//! checks, and is read back by tools that expect the file as it is).

use tower_http::compression::predicate::{DefaultPredicate, NotForContentType, Predicate};
use tower_http::compression::{CompressionLayer, CompressionLevel};

use crate::handlers::backup::CONTENT_TYPE as BACKUP;

/// The layer `app()` wraps every route in.
pub(crate) fn layer() -> CompressionLayer<impl Predicate> {
    // tower-http's default predicate leaves out event streams, images,
    // gRPC and bodies under 32 bytes.
    let predicate = DefaultPredicate::new().and(NotForContentType::const_new(BACKUP));
    CompressionLayer::new()
        .gzip(true)
        .br(true)
        .zstd(true)
        // Brotli's own default (11) is meant for files compressed once and
        // costs seconds per megabyte; 4 compresses a page of log about as
        // well as gzip's default, faster, and suits gzip and zstd as well.
        .quality(CompressionLevel::Precise(4))
        .compress_when(predicate)
}
