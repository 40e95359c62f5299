//! Test doubles and the tests that need them (compiled for unit tests only): in-memory page
//! stores standing in for the pager, and transaction-layer tests over them.

pub(crate) mod mem_pages;
mod txn_tests;
