//! Writes through a 3-node cluster whose every message waits a while on the way (the
//! memory transport's delay fault, as between machines), with the leader's writer keeping
//! one run of batches in flight against several (`StoreOptions::writes_in_flight`): what
//! proposing a batch while the last is replicated is worth when the round trip, not the
//! CPU, is what a write waits for. The configurations take turns, a fresh cluster each
//! round; the store's storage is in memory, so a round trip is the only wait.
//!
//! `cargo bench -p larch-cluster --bench writes_in_flight [-- --delay-ms D --writers W
//! --seconds S --rounds R]`

#[path = "../tests/common/mod.rs"]
mod common;

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{add, add_suffix, apply, member, store_options, write, Op, SUFFIX};
use larch_cluster::network::memory::{Faults, Router};
use larch_cluster::ClusterNode;
use larch_store::storage::FaultStorage;
use larch_store::Store;

struct Settings {
    delay: Duration,
    writers: u64,
    seconds: u64,
    rounds: u64,
}

fn settings() -> Settings {
    let mut s = Settings {
        delay: Duration::from_millis(2),
        writers: 32,
        seconds: 3,
        rounds: 3,
    };
    let args: Vec<String> = std::env::args().collect();
    let mut i = 1;
    while i + 1 < args.len() {
        let n: u64 = args[i + 1].parse().unwrap_or(0);
        match args[i].as_str() {
            "--delay-ms" => s.delay = Duration::from_millis(n),
            "--writers" => s.writers = n.max(1),
            "--seconds" => s.seconds = n.max(1),
            "--rounds" => s.rounds = n.max(1),
            _ => {
                i += 1;
                continue;
            }
        }
        i += 2;
    }
    s
}

/// Three nodes, links delayed by up to `delay`, the leader's writer keeping `in_flight`
/// runs in flight; returns the leader's store and the nodes.
async fn cluster(in_flight: usize, delay: Duration, seed: u64) -> (Store, Vec<ClusterNode>) {
    let router = Router::new(seed);
    let mut nodes = Vec::new();
    let mut stores = BTreeMap::new();
    for id in 1..=3u64 {
        let mut options = store_options(&FaultStorage::new(seed ^ id), true);
        options.writes_in_flight = in_flight;
        let store = Store::open(options).unwrap().0;
        let node = ClusterNode::start(
            id,
            &store,
            Path::new("/data/cluster"),
            router.network(id),
            common::timing(),
        )
        .await
        .unwrap();
        router.add(id, node.raft().clone());
        stores.insert(id, store);
        nodes.push(node);
    }
    let members = (1..=3u64).map(|id| (id, member(id))).collect();
    nodes[0].initialize(members).await.unwrap();
    let leader = loop {
        if let Some(l) = nodes[0].raft().metrics().borrow().current_leader {
            break l;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    let store = stores[&leader].clone();
    add_suffix(&store).await;
    router.set_faults(Faults {
        max_delay: delay,
        ..Faults::default()
    });
    (store, nodes)
}

/// Writes per second through `store` by `writers` writers, each with one write in flight.
async fn measure(store: &Store, s: &Settings) -> f64 {
    for w in 0..s.writers {
        write(store, add(&format!("w{w}"), "0")).await.unwrap().unwrap();
    }
    let done = Arc::new(AtomicU64::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let started = Instant::now();
    let threads: Vec<_> = (0..s.writers)
        .map(|w| {
            let (store, done, stop) = (store.clone(), done.clone(), stop.clone());
            std::thread::spawn(move || {
                let mut i = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    i += 1;
                    let op = Op::Modify {
                        dn: format!("cn=w{w},{SUFFIX}"),
                        value: i.to_string(),
                    };
                    if matches!(apply(&store, op), Ok(Ok(()))) {
                        done.fetch_add(1, Ordering::Relaxed);
                    }
                }
            })
        })
        .collect();
    tokio::time::sleep(Duration::from_secs(s.seconds)).await;
    stop.store(true, Ordering::Relaxed);
    let n = done.load(Ordering::Relaxed);
    let elapsed = started.elapsed();
    for t in threads {
        let _ = t.join();
    }
    n as f64 / elapsed.as_secs_f64()
}

fn main() {
    let s = settings();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(4)
        .enable_all()
        .build()
        .unwrap();
    println!(
        "3 nodes, links delayed 0 to {:?}, {} writers with one modify in flight each, {} s per round",
        s.delay, s.writers, s.seconds
    );
    let mut rates: BTreeMap<usize, Vec<f64>> = BTreeMap::new();
    for round in 0..s.rounds {
        // The configurations take turns, the first one changing each round.
        let order = if round % 2 == 0 { [1, 4] } else { [4, 1] };
        for in_flight in order {
            let rate = runtime.block_on(async {
                let (store, nodes) = cluster(in_flight, s.delay, 40 + round).await;
                let rate = measure(&store, &s).await;
                for n in &nodes {
                    let _ = n.shutdown().await;
                }
                rate
            });
            println!("round {} in flight {in_flight}: {rate:.0} writes/s", round + 1);
            rates.entry(in_flight).or_default().push(rate);
        }
    }
    let median = |v: &Vec<f64>| {
        let mut v = v.clone();
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let (one, four) = (median(&rates[&1]), median(&rates[&4]));
    println!(
        "median: 1 in flight {one:.0} writes/s, 4 in flight {four:.0} writes/s, ratio {:.2}",
        four / one
    );
}
