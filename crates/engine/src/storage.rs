//! The free space of the data directory's disk, for the floor below which
//! new jobs are refused (`min_free_bytes`) and for `/metrics`.

use std::path::Path;

/// Bytes an unprivileged process may still write on the filesystem that
/// holds `dir` (`statvfs`'s available blocks: root's reserve excluded,
/// as the database's writes may not reach it either).
pub(crate) fn free_bytes(dir: &Path) -> nix::Result<u64> {
    let s = nix::sys::statvfs::statvfs(dir)?;
    Ok(s.blocks_available().saturating_mul(s.fragment_size()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_free_space_of_a_directory_is_what_df_counts() {
        let dir = std::env::temp_dir();
        let free = free_bytes(&dir).unwrap();
        let s = nix::sys::statvfs::statvfs(&dir).unwrap();
        let total = s.blocks() * s.fragment_size();
        assert!(free <= total, "{free} free of {total}");
        assert!(free_bytes(Path::new("/no/such/dir")).is_err());
    }
}
