use tersedb_codecs::{rice::Rice, BlockCodec, Codec, CodecId};
fn main() {
    let keys: Vec<u32> = std::fs::read_to_string("/tmp/clustered2m.txt")
        .unwrap()
        .lines()
        .map(|l| l.parse().unwrap())
        .collect();
    for id in [CodecId::PforDelta, CodecId::Rice] {
        let c = Codec(id);
        let bk = c.max_keys();
        let mut buf = vec![0u8; 4096];
        let (mut bytes, mut blocks, mut comp) = (0usize, 0usize, 0usize);
        for ch in keys.chunks(bk) {
            let d = c.encode(ch, &mut buf).unwrap();
            bytes += d.size as usize;
            blocks += 1;
            if id == CodecId::Rice && Rice::mode(&d) == tersedb_codecs::rice::Mode::Complement {
                comp += 1;
            }
        }
        println!(
            "{id}: {blocks} blocks, payload {:.4} B/key, +desc {:.4} B/key, complement {comp}",
            bytes as f64 / keys.len() as f64,
            (bytes + 12 * blocks) as f64 / keys.len() as f64
        );
    }
    let _ = Rice::MAX_KEYS;
}
