//! Ids: a set of u32 user ids and a u64 -> u64 table of order ids to user ids, kept compressed
//! (a codec chosen per block). Runs twice on the same file without error: `put` overwrites.
//!
//! `cargo run -p tersedb --example ids [FILE]`

use std::path::{Path, PathBuf};
use tersedb::{Env, EnvOptions, TableDef};

/// User ids (a set: no values).
const USERS: TableDef<u32, ()> = TableDef::new("users");
/// Order id -> user id.
const ORDERS: TableDef<u64, u64> = TableDef::new("orders");

/// Loads ids into `path` and reads them back; returns the number of orders of user 7.
pub fn run(path: &Path) -> tersedb::Result<usize> {
    let env = Env::open_or_create(path, &EnvOptions::default())?;
    let mut w = env.begin_write()?;
    let users = w.open_table(USERS)?;
    let orders = w.open_table(ORDERS)?;
    for user in (0..10_000u32).map(|i| i * 3) {
        users.put(&mut w, user, ())?;
    }
    for order in 0..50_000u64 {
        let id = 1_000_000_000 + order;
        orders.put(&mut w, id, order % 10_000 * 3)?;
    }
    w.commit()?;

    let r = env.begin_read()?;
    assert!(users.contains(&r, 29_997)?);
    assert!(!users.contains(&r, 29_998)?);
    assert_eq!(users.len(&r)?, 10_000);
    // Range items are typed: (u64, u64), no byte conversions.
    let of_user_21 = orders
        .range(&r, 1_000_000_000..1_000_050_000)?
        .filter(|e| matches!(e, Ok((_, u)) if *u == 21))
        .count();
    let (first, _) = orders.first(&r)?.expect("orders were loaded");
    println!(
        "{} users, {} orders from {first}, user 21 placed {of_user_21}",
        users.len(&r)?,
        orders.len(&r)?
    );
    // The same count inside the tree, without copying entries out.
    let q = r.query_str("SELECT COUNT(*) FROM orders WHERE record = 21")?;
    println!("{q}");
    Ok(of_user_21)
}

fn main() -> tersedb::Result<()> {
    let path = std::env::args()
        .nth(1)
        .map(PathBuf::from)
        .unwrap_or_else(|| std::env::temp_dir().join("tersedb-example-ids.tdb"));
    run(&path)?;
    Ok(())
}
