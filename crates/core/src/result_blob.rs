//! A job's result as it is stored: a small header (magic, format version,
//! codec, raw length, checksum) and the body, zstd-compressed unless it is
//! tiny or does not shrink. The stores keep the blob as opaque bytes; the
//! engine encodes it off the store's writer, the API decodes it (or sends
//! the compressed body as it is to a client that accepts zstd).
//!
//! Version 1, all integers little-endian (docs/results.md):
//!
//! | bytes  | field                                                  |
//! |--------|--------------------------------------------------------|
//! | 0..4   | magic `JLRB`                                           |
//! | 4      | format version, 1                                      |
//! | 5      | codec: 0 none, 1 zstd (one frame)                      |
//! | 6..8   | reserved, 0                                            |
//! | 8..16  | raw length: bytes of JSON once decoded                 |
//! | 16..20 | CRC-32 (IEEE) of the body, bytes 20..                  |
//! | 20..   | body                                                   |
//!
//! The checksum covers the stored body, so a blob can be checked without
//! decompressing it (before its zstd body is sent on as it is); zstd
//! checks its own frame too (its content checksum is on).

use std::io::{self, Read, Write};

use thiserror::Error;

/// Deepest nesting of arrays and objects a result may have. serde_json
/// checks JSON without building it (`IgnoredAny`) but does not count
/// depth then, so [`check_depth`] does.
pub const MAX_DEPTH: usize = 128;

/// Checks that JSON `text` (already known to be valid) nests at most
/// [`MAX_DEPTH`] arrays and objects. The error names the byte offset of
/// the bracket that went too deep.
pub fn check_depth(text: &[u8]) -> Result<(), String> {
    let (mut depth, mut in_str, mut escaped) = (0usize, false, false);
    for (at, &c) in text.iter().enumerate() {
        if in_str {
            if escaped {
                escaped = false;
            } else if c == b'\\' {
                escaped = true;
            } else if c == b'"' {
                in_str = false;
            }
            continue;
        }
        match c {
            b'"' => in_str = true,
            b'[' | b'{' => {
                depth += 1;
                if depth > MAX_DEPTH {
                    return Err(format!(
                        "nested more than {MAX_DEPTH} levels deep (at byte {at})"
                    ));
                }
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    Ok(())
}

pub const MAGIC: [u8; 4] = *b"JLRB";
/// The format this build writes; it reads this one and every earlier.
pub const VERSION: u8 = 1;
pub const HEADER_LEN: usize = 20;

/// Results shorter than this are stored as they are: a zstd frame's own
/// header and the time to make it are not worth a few bytes.
pub const COMPRESS_FROM: usize = 256;

/// zstd's level, chosen by `cargo bench -p joblog-store --bench results`
/// (docs/benchmarks.md): on 4 MB of JSON records level 3 took 4.4 ms
/// against level 1's 3.5 ms, for 16.3× against 14.6× (11 % fewer bytes,
/// kept for as long as the result is); level 6 took 19.5 ms for 21.7×.
pub const LEVEL: i32 = 3;

/// How the body is stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Codec {
    None,
    Zstd,
}

impl Codec {
    fn byte(self) -> u8 {
        match self {
            Codec::None => 0,
            Codec::Zstd => 1,
        }
    }

    fn from_byte(b: u8) -> Result<Codec, BlobError> {
        match b {
            0 => Ok(Codec::None),
            1 => Ok(Codec::Zstd),
            other => Err(BlobError::UnknownCodec(other)),
        }
    }

    /// Its name as HTTP's `Content-Encoding` has it, when it has one.
    pub fn content_encoding(self) -> Option<&'static str> {
        match self {
            Codec::None => None,
            Codec::Zstd => Some("zstd"),
        }
    }
}

/// What is wrong with a stored blob. A store that hands back such a blob
/// holds a damaged or foreign value; the job's result is unreadable, the
/// rest of the store is not.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum BlobError {
    #[error("the stored result is {0} bytes, shorter than its header")]
    TooShort(usize),
    #[error("the stored result does not start with the result blob's magic bytes")]
    BadMagic,
    #[error("the stored result has format version {0}, newer than this joblog reads ({VERSION})")]
    UnknownVersion(u8),
    #[error("the stored result names codec {0}, which this joblog does not know")]
    UnknownCodec(u8),
    #[error(
        "the stored result is damaged: its checksum is {found:08x}, its header says {expected:08x}"
    )]
    Checksum { expected: u32, found: u32 },
    #[error(
        "the stored result is damaged: it decodes to {found} bytes, its header says {expected}"
    )]
    Length { expected: u64, found: u64 },
    #[error("the stored result is damaged: {0}")]
    Corrupt(String),
}

/// A blob's header, as read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BlobHeader {
    pub version: u8,
    pub codec: Codec,
    /// Bytes of JSON once decoded.
    pub raw_len: u64,
    pub checksum: u32,
}

/// A result encoded for a store, with the length the job's row shows.
/// Made only by [`ResultBlob::encode`]: a store never writes bytes that
/// are not a blob.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResultBlob {
    bytes: Vec<u8>,
    raw_len: u64,
}

impl ResultBlob {
    /// `raw`, JSON the caller has checked, as a blob ([`encode`]).
    pub fn encode(raw: &[u8]) -> ResultBlob {
        ResultBlob {
            bytes: encode(raw),
            raw_len: raw.len() as u64,
        }
    }

    /// Bytes of JSON it decodes to: `result.bytes` of the job.
    pub fn raw_len(&self) -> u64 {
        self.raw_len
    }

    /// What the store keeps.
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes
    }

    pub fn into_bytes(self) -> Vec<u8> {
        self.bytes
    }
}

/// `raw` (JSON, already checked) as a blob: compressed with zstd at
/// [`LEVEL`] unless it is shorter than [`COMPRESS_FROM`] or would not
/// shrink.
pub fn encode(raw: &[u8]) -> Vec<u8> {
    if raw.len() >= COMPRESS_FROM {
        if let Ok(blob) = compress(raw) {
            if blob.len() < HEADER_LEN + raw.len() {
                return blob;
            }
        }
    }
    let mut blob = Vec::with_capacity(HEADER_LEN + raw.len());
    push_header(&mut blob, Codec::None, raw.len() as u64);
    blob.extend_from_slice(raw);
    seal(&mut blob);
    blob
}

fn compress(raw: &[u8]) -> io::Result<Vec<u8>> {
    let mut blob = Vec::with_capacity(HEADER_LEN + raw.len() / 4);
    push_header(&mut blob, Codec::Zstd, raw.len() as u64);
    let mut enc = zstd::stream::Encoder::new(blob, LEVEL)?;
    enc.include_checksum(true)?;
    enc.set_pledged_src_size(Some(raw.len() as u64))?;
    enc.write_all(raw)?;
    let mut blob = enc.finish()?;
    seal(&mut blob);
    Ok(blob)
}

fn push_header(blob: &mut Vec<u8>, codec: Codec, raw_len: u64) {
    blob.extend_from_slice(&MAGIC);
    blob.push(VERSION);
    blob.push(codec.byte());
    blob.extend_from_slice(&[0, 0]);
    blob.extend_from_slice(&raw_len.to_le_bytes());
    blob.extend_from_slice(&[0; 4]);
}

/// Writes the body's checksum into the header.
fn seal(blob: &mut [u8]) {
    let sum = crc32fast::hash(&blob[HEADER_LEN..]);
    blob[16..20].copy_from_slice(&sum.to_le_bytes());
}

/// The header of `blob`, checked for what it says (not yet against the
/// body: see [`verify`]).
pub fn header(blob: &[u8]) -> Result<BlobHeader, BlobError> {
    if blob.len() < HEADER_LEN {
        return Err(BlobError::TooShort(blob.len()));
    }
    if blob[0..4] != MAGIC {
        return Err(BlobError::BadMagic);
    }
    let version = blob[4];
    if version == 0 || version > VERSION {
        return Err(BlobError::UnknownVersion(version));
    }
    let codec = Codec::from_byte(blob[5])?;
    let raw_len = u64::from_le_bytes(blob[8..16].try_into().expect("8 bytes"));
    let checksum = u32::from_le_bytes(blob[16..20].try_into().expect("4 bytes"));
    Ok(BlobHeader {
        version,
        codec,
        raw_len,
        checksum,
    })
}

/// The header of `blob` and its body, once the body's checksum matches.
pub fn verify(blob: &[u8]) -> Result<(BlobHeader, &[u8]), BlobError> {
    let head = header(blob)?;
    let body = &blob[HEADER_LEN..];
    let found = crc32fast::hash(body);
    if found != head.checksum {
        return Err(BlobError::Checksum {
            expected: head.checksum,
            found,
        });
    }
    if head.codec == Codec::None && body.len() as u64 != head.raw_len {
        return Err(BlobError::Length {
            expected: head.raw_len,
            found: body.len() as u64,
        });
    }
    Ok((head, body))
}

/// Writes the JSON of `blob` to `out` as it is decoded, a piece at a time
/// (a 32 MB result never needs a second 32 MB buffer). Fails, having
/// written part of it, when the body does not decode to the length its
/// header gives.
pub fn decode_to(blob: &[u8], out: &mut dyn Write) -> Result<u64, DecodeError> {
    let (head, body) = verify(blob)?;
    let written = match head.codec {
        Codec::None => {
            out.write_all(body).map_err(DecodeError::Write)?;
            body.len() as u64
        }
        Codec::Zstd => {
            let mut dec = zstd::stream::read::Decoder::with_buffer(body)
                .map_err(|e| BlobError::Corrupt(e.to_string()))?
                .single_frame();
            // One byte past the promised length is enough to tell a lie.
            let mut limited = (&mut dec).take(head.raw_len.saturating_add(1));
            copy(&mut limited, out)?
        }
    };
    if written != head.raw_len {
        return Err(BlobError::Length {
            expected: head.raw_len,
            found: written,
        }
        .into());
    }
    Ok(written)
}

fn copy(from: &mut dyn Read, out: &mut dyn Write) -> Result<u64, DecodeError> {
    let mut buf = vec![0u8; 64 * 1024];
    let mut total = 0u64;
    loop {
        let n = match from.read(&mut buf) {
            Ok(0) => return Ok(total),
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(BlobError::Corrupt(e.to_string()).into()),
        };
        out.write_all(&buf[..n]).map_err(DecodeError::Write)?;
        total += n as u64;
    }
}

/// The JSON of `blob`, whole.
pub fn decode(blob: &[u8]) -> Result<Vec<u8>, BlobError> {
    let head = header(blob)?;
    // The header's length is only a hint for the buffer: capped, so a
    // damaged one cannot ask for terabytes before the body is checked.
    let mut out = Vec::with_capacity(head.raw_len.min(64 << 20) as usize);
    match decode_to(blob, &mut out) {
        Ok(_) => Ok(out),
        Err(DecodeError::Blob(e)) => Err(e),
        Err(DecodeError::Write(e)) => Err(BlobError::Corrupt(e.to_string())),
    }
}

/// Why [`decode_to`] stopped: the blob, or where it was written to.
#[derive(Debug, Error)]
pub enum DecodeError {
    #[error(transparent)]
    Blob(#[from] BlobError),
    #[error("cannot write the result: {0}")]
    Write(io::Error),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn depth_counts_brackets_outside_strings_only() {
        let deep = |n: usize| format!("{}{}", "[".repeat(n), "]".repeat(n));
        assert_eq!(check_depth(deep(MAX_DEPTH).as_bytes()), Ok(()));
        let e = check_depth(deep(MAX_DEPTH + 1).as_bytes()).unwrap_err();
        assert_eq!(e, "nested more than 128 levels deep (at byte 128)");
        let objects = "{\"a\":".repeat(200) + "1" + &"}".repeat(200);
        assert!(check_depth(objects.as_bytes()).is_err());
        // Brackets in strings, escaped quotes included, are text.
        let text = format!("[\"{}\\\"{}\"]", "[".repeat(500), "{".repeat(500));
        assert_eq!(check_depth(text.as_bytes()), Ok(()));
        // Siblings do not add up.
        let wide = format!("[{}]", vec![deep(100); 50].join(","));
        assert_eq!(check_depth(wide.as_bytes()), Ok(()));
    }

    fn json_of(len: usize) -> Vec<u8> {
        let mut s = String::from("[");
        let mut i = 0;
        while s.len() < len {
            if i > 0 {
                s.push(',');
            }
            s.push_str(&format!("{{\"i\":{i},\"name\":\"item-{i}\",\"ok\":true}}"));
            i += 1;
        }
        s.push(']');
        s.into_bytes()
    }

    #[test]
    fn tiny_results_stay_plain_and_larger_ones_are_compressed() {
        for raw in [b"".to_vec(), b"{}".to_vec(), br#"{"ok":true}"#.to_vec()] {
            let blob = encode(&raw);
            assert_eq!(header(&blob).unwrap().codec, Codec::None);
            assert_eq!(blob.len(), HEADER_LEN + raw.len());
            assert_eq!(decode(&blob).unwrap(), raw);
        }
        let raw = json_of(100_000);
        let blob = encode(&raw);
        let head = header(&blob).unwrap();
        assert_eq!(head.codec, Codec::Zstd);
        assert_eq!(head.raw_len, raw.len() as u64);
        assert!(
            blob.len() < raw.len() / 4,
            "{} of {}",
            blob.len(),
            raw.len()
        );
        assert_eq!(decode(&blob).unwrap(), raw);
    }

    #[test]
    fn what_does_not_shrink_is_stored_as_it_is() {
        // Digits of a pseudo-random sequence in a string: zstd gains little,
        // and must not make it larger than plain.
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        let mut s = String::from("\"");
        for _ in 0..300 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            s.push(char::from(b'!' + (x % 90) as u8).to_ascii_lowercase());
        }
        s = s.replace(['"', '\\'], "x");
        s.push('"');
        let blob = encode(s.as_bytes());
        assert!(blob.len() <= HEADER_LEN + s.len());
        assert_eq!(decode(&blob).unwrap(), s.as_bytes());
    }

    #[test]
    fn a_flipped_bit_anywhere_is_a_clear_error_not_a_panic() {
        let raw = json_of(20_000);
        let blob = encode(&raw);
        for at in [HEADER_LEN, HEADER_LEN + 7, blob.len() / 2, blob.len() - 1] {
            let mut bad = blob.clone();
            bad[at] ^= 0x10;
            let err = decode(&bad).unwrap_err();
            assert!(matches!(err, BlobError::Checksum { .. }), "{err}");
            assert!(err.to_string().contains("damaged"), "{err}");
        }
        let mut bad = blob.clone();
        bad[0] = b'X';
        assert_eq!(decode(&bad).unwrap_err(), BlobError::BadMagic);
        let mut bad = blob.clone();
        bad[4] = 9;
        assert_eq!(decode(&bad).unwrap_err(), BlobError::UnknownVersion(9));
        let mut bad = blob.clone();
        bad[5] = 7;
        assert_eq!(decode(&bad).unwrap_err(), BlobError::UnknownCodec(7));
        assert_eq!(decode(&blob[..5]).unwrap_err(), BlobError::TooShort(5));
        assert_eq!(decode(b"").unwrap_err(), BlobError::TooShort(0));
    }

    #[test]
    fn a_header_that_lies_about_the_length_is_caught() {
        for raw in [json_of(10), json_of(10_000)] {
            let mut blob = encode(&raw);
            let claimed = raw.len() as u64 + 1;
            blob[8..16].copy_from_slice(&claimed.to_le_bytes());
            // The checksum covers the body only: the lie gets past it and
            // must be caught by the decoded length.
            assert_eq!(
                decode(&blob).unwrap_err(),
                BlobError::Length {
                    expected: claimed,
                    found: raw.len() as u64
                }
            );
            let short = raw.len() as u64 - 1;
            blob[8..16].copy_from_slice(&short.to_le_bytes());
            assert!(matches!(
                decode(&blob).unwrap_err(),
                BlobError::Length { .. }
            ));
        }
    }

    #[test]
    fn a_damaged_zstd_body_with_a_matching_checksum_is_an_error() {
        let raw = json_of(50_000);
        let mut blob = encode(&raw);
        let mid = blob.len() / 2;
        blob[mid] ^= 0xff;
        seal(&mut blob);
        assert!(matches!(
            decode(&blob).unwrap_err(),
            BlobError::Corrupt(_) | BlobError::Length { .. }
        ));
    }

    /// Blobs written by format version 1, checked in: every later joblog
    /// must read them (a store keeps results for years). Never regenerate
    /// them; a new version adds its own beside them.
    #[test]
    fn version_1_fixtures_keep_decoding() {
        let json: &[u8] = include_bytes!("../fixtures/result-v1.json");
        let zstd: &[u8] = include_bytes!("../fixtures/result-v1-zstd.blob");
        let head = header(zstd).unwrap();
        assert_eq!((head.version, head.codec), (1, Codec::Zstd));
        assert_eq!(head.raw_len, json.len() as u64);
        assert_eq!(decode(zstd).unwrap(), json);
        serde_json::from_slice::<serde_json::Value>(json).unwrap();

        let plain: &[u8] = include_bytes!("../fixtures/result-v1-plain.blob");
        let head = header(plain).unwrap();
        assert_eq!((head.version, head.codec), (1, Codec::None));
        assert_eq!(decode(plain).unwrap(), br#"{"ok":true}"#);
    }

    #[test]
    fn decoding_to_a_writer_gives_the_same_bytes_in_pieces() {
        let raw = json_of(300_000);
        let blob = encode(&raw);
        let mut out = Vec::new();
        assert_eq!(decode_to(&blob, &mut out).unwrap(), raw.len() as u64);
        assert_eq!(out, raw);
    }
}
