//! The seed corpora of the codec fuzz targets (crates/codecs/fuzz/seeds/<target>/) are real
//! blocks: each codec encodes a few key sets (one key, dense, sparse, with outliers, full), and
//! the block is written in the fuzz input layout of crates/codecs/fuzz/src/lib.rs. This test
//! checks the checked-in files are exactly what the codecs encode today (so a format change
//! cannot leave the fuzzers starting from stale blocks); `TERSEDB_WRITE_SEEDS=1` rewrites them.

use std::path::PathBuf;
use tersedb_codecs::{Codec, CodecId};

/// The fuzz targets and the codecs each one picks from (`pick % len`), as in fuzz_targets/.
const FAMILIES: [(&str, &[CodecId]); 4] = [
    (
        "byte_codecs",
        &[
            CodecId::VByte,
            CodecId::MaskedVByte,
            CodecId::VarIntGb,
            CodecId::StreamVByte,
        ],
    ),
    (
        "packed_codecs",
        &[CodecId::Bp128, CodecId::For, CodecId::SimdFor],
    ),
    ("pfor_codecs", &[CodecId::Pfor, CodecId::PforDelta]),
    ("rice_codec", &[CodecId::Rice]),
];

fn key_sets(max: usize) -> Vec<(&'static str, Vec<u32>)> {
    vec![
        ("one", vec![77]),
        ("dense", (1000..1000 + 40).collect()),
        (
            "sparse",
            (0..60u32)
                .map(|i| i * 1_000_003 % 4_000_000_000)
                .collect::<std::collections::BTreeSet<_>>()
                .into_iter()
                .collect(),
        ),
        (
            "outliers",
            (0..100u32)
                .map(|i| if i % 17 == 0 { i * 900_000 } else { i * 3 + 5 })
                .collect::<std::collections::BTreeSet<_>>()
                .into_iter()
                .collect(),
        ),
        ("full", (0..max as u32).map(|i| i * 7 + i % 5).collect()),
    ]
}

/// `[start u32][count u16][last u32][size u16][bits u8][key u32][slot u16][pick u8][payload]`.
fn input(c: Codec, pick: u8, keys: &[u32]) -> Vec<u8> {
    let mut payload = vec![0u8; c.max_payload_len(keys.len())];
    let d = c.encode(keys, &mut payload).expect("encode");
    payload.truncate(d.size as usize);
    let mut v = Vec::new();
    v.extend(d.start.to_le_bytes());
    v.extend((d.count as u16).to_le_bytes());
    v.extend(d.last.to_le_bytes());
    v.extend((d.size as u16).to_le_bytes());
    v.push(d.bits as u8);
    v.extend(keys[keys.len() / 2].wrapping_add(1).to_le_bytes()); // a key to insert / search
    v.extend(((keys.len() / 3) as u16).to_le_bytes()); // a slot to select / remove
    v.push(pick);
    v.extend(payload);
    v
}

#[test]
fn codec_fuzz_seeds_are_current() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fuzz/seeds");
    let write = std::env::var_os("TERSEDB_WRITE_SEEDS").is_some();
    for (target, ids) in FAMILIES {
        let dir = root.join(target);
        if write {
            std::fs::create_dir_all(&dir).unwrap();
        }
        for (pick, &id) in ids.iter().enumerate() {
            let c = Codec(id);
            for (name, keys) in key_sets(c.max_keys()) {
                let data = input(c, pick as u8, &keys);
                let path = dir.join(format!("{}-{name}", id.name()));
                if write {
                    std::fs::write(&path, &data).unwrap();
                } else {
                    let have = std::fs::read(&path).unwrap_or_else(|e| {
                        panic!("{}: {e} (TERSEDB_WRITE_SEEDS=1 writes it)", path.display())
                    });
                    assert_eq!(
                        have,
                        data,
                        "{} is stale (TERSEDB_WRITE_SEEDS=1)",
                        path.display()
                    );
                }
            }
        }
    }
}
