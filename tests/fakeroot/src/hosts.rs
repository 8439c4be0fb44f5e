//! The hosts built whole: the bundled demo host and the benchmark's hosts.

use super::{FakeRoot, MdSpec, Use};
use std::path::Path;

/// The bundled demo host (`examples/demo-host`): one array of every layout the tool handles.
pub fn demo_host(dir: &Path) -> FakeRoot {
    let mut r = FakeRoot::new(dir, 32);
    // md0: SAP HANA data, raid5 over partitions of four 8-queue NVMe drives. auto -> 8.
    let parts: Vec<String> = (0..4)
        .map(|c| {
            let d = r.nvme(c, 8);
            r.partition(&d, 1)
        })
        .collect();
    let p: Vec<&str> = parts.iter().map(String::as_str).collect();
    r.md(
        "md0",
        &MdSpec::level("raid5", 0xa1b2c3d4).devname("hana_data"),
        &p,
    );
    // md1: SAP HANA log, raid10 over four NVMe multipath namespaces, mid-resync.
    let heads: Vec<String> = (4..8)
        .map(|s| r.nvme_multipath(s, &[(s, 4), (s + 10, 4)]))
        .collect();
    let h: Vec<&str> = heads.iter().map(String::as_str).collect();
    let mut log = MdSpec::level("raid10", 0xb2c3d4e5).devname("hana_log");
    log.sync_action = "resync".into();
    log.sync_completed = "1048576 / 4194304".into();
    log.sync_speed = "187000".into();
    r.md("md1", &log, &h);
    // md2: raid6 over dm-multipath devices, each over the two 16-queue controllers of a
    // dual-port NVMe drive (nvme_core.multipath=N, dm-multipath as on RHEL 8). auto -> 16.
    let mpaths: Vec<String> = (0..4)
        .map(|i| {
            let a = r.nvme(20 + 2 * i, 16);
            let b = r.nvme(21 + 2 * i, 16);
            r.dm_multipath(i, &[&a, &b])
        })
        .collect();
    let m: Vec<&str> = mpaths.iter().map(String::as_str).collect();
    r.md(
        "md2",
        &MdSpec::level("raid6", 0xc3d4e5f6).devname("archive"),
        &m,
    );
    // md3: raid5 over single-queue SATA disks. auto -> 0 (one thread gains nothing more).
    let sata: Vec<String> = ["sdi", "sdj", "sdk"].iter().map(|n| r.scsi(n, 1)).collect();
    let s: Vec<&str> = sata.iter().map(String::as_str).collect();
    r.md(
        "md3",
        &MdSpec::level("raid5", 0xd4e5f607).devname("scratch"),
        &s,
    );
    // md126: an IMSM container, inactive forever, no level.
    let imsm: Vec<String> = ["sdl", "sdm"].iter().map(|n| r.scsi(n, 1)).collect();
    let mut container = MdSpec::level("", 0xe5f60718);
    container.array_state = "inactive".into();
    container.metadata_version = "external:imsm".into();
    container.kernel_uuid_file = false;
    let i: Vec<&str> = imsm.iter().map(String::as_str).collect();
    r.md("md126", &container, &i);
    // md0 also has a SATA hot spare: reported with its role, not counted (it would make auto 0).
    let spare = r.scsi("sdn", 1);
    r.add_member("md0", &spare, Use::Spare);
    r
}

/// A benchmark host: `arrays` raid5 arrays, each over `drives` NVMe drives of `queues` queues.
pub fn bench_host(dir: &Path, arrays: u32, drives: u32, queues: u32) -> FakeRoot {
    let mut r = FakeRoot::new(dir, 64);
    for a in 0..arrays {
        let members: Vec<String> = (0..drives)
            .map(|d| r.nvme(a * drives + d, queues))
            .collect();
        let m: Vec<&str> = members.iter().map(String::as_str).collect();
        r.md(
            &format!("md{a}"),
            &MdSpec::level("raid5", 0x1000_0000 + a).devname(&format!("data{a}")),
            &m,
        );
    }
    r
}
