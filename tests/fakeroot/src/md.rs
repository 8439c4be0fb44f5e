//! md arrays as the kernel shows them for their level, and how md uses each member.

use super::{kernel_uuid, link, write, FakeRoot};
use std::fs;

/// How an md array looks; `Default` is a clean, idle raid5 with kernel defaults.
#[derive(Clone, Debug)]
pub struct MdSpec {
    pub level: String,
    pub uuid: String,
    pub array_state: String,
    pub metadata_version: String,
    pub sync_action: String,
    pub sync_completed: String,
    pub sync_speed: String,
    /// udev's `/dev/md/<devname>` link, if any.
    pub devname: Option<String>,
    /// Give `md/uuid` (kernels since about 5.9); older kernels only have udev's by-id link.
    pub kernel_uuid_file: bool,
    /// `md/uuid` reads all zeros, as on external-metadata (IMSM/DDF) arrays.
    pub zero_kernel_uuid: bool,
    /// `md/reshape_position`: `none`, or the sector a reshape has reached.
    pub reshape_position: String,
}

impl Default for MdSpec {
    fn default() -> Self {
        MdSpec {
            level: "raid5".into(),
            uuid: "a1b2c3d4:e5f60718:293a4b5c:6d7e8f90".into(),
            array_state: "clean".into(),
            metadata_version: "1.2".into(),
            sync_action: "idle".into(),
            sync_completed: "none".into(),
            sync_speed: "none".into(),
            devname: None,
            kernel_uuid_file: true,
            zero_kernel_uuid: false,
            reshape_position: "none".into(),
        }
    }
}

impl MdSpec {
    pub fn level(level: &str, uuid_seed: u32) -> MdSpec {
        MdSpec {
            level: level.into(),
            uuid: format!("{uuid_seed:08x}:e5f60718:293a4b5c:6d7e8f90"),
            ..MdSpec::default()
        }
    }
    pub fn devname(mut self, name: &str) -> MdSpec {
        self.devname = Some(name.into());
        self
    }
    /// A raid5 member array `index` of the IMSM container `container` (Intel VROC): metadata
    /// `external:/<container>/<index>`, an all-zero `md/uuid`, the real uuid on udev's link.
    pub fn imsm_member(container: &str, index: u32, uuid_seed: u32) -> MdSpec {
        MdSpec {
            metadata_version: format!("external:/{container}/{index}"),
            zero_kernel_uuid: true,
            ..MdSpec::level("raid5", uuid_seed)
        }
    }
    /// An IMSM container: inactive forever, no level, no md/uuid.
    pub fn imsm_container(uuid_seed: u32) -> MdSpec {
        MdSpec {
            array_state: "inactive".into(),
            metadata_version: "external:imsm".into(),
            kernel_uuid_file: false,
            ..MdSpec::level("", uuid_seed)
        }
    }
    /// A raid5 in the middle of a reshape (`mdadm --grow`).
    pub fn reshaping(uuid_seed: u32) -> MdSpec {
        MdSpec {
            sync_action: "reshape".into(),
            sync_completed: "524288 / 4194304".into(),
            sync_speed: "52000".into(),
            reshape_position: "1048576".into(),
            ..MdSpec::level("raid5", uuid_seed)
        }
    }
}

/// How md uses one member, as `md/dev-<member>/state` and `slot` show it (md.c `state_show`,
/// `slot_show`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Use {
    /// `in_sync` in the next data slot.
    Active,
    /// `spare` but in the next data slot: recovery onto it is running.
    Rebuilding,
    /// `spare`, slot `none`.
    Spare,
    /// `faulty`, slot `none` (after `mdadm --fail`, before `--remove`).
    Faulty,
    /// `journal`, slot `journal` (`mdadm --write-journal`).
    Journal,
    /// In sync in the next data slot with bad blocks md has not acknowledged yet (native
    /// metadata, before the superblock records them): `state_show` prints `faulty,in_sync,blocked`.
    BadBlocks,
}

impl FakeRoot {
    /// An md array `name` over `members`, all active (members of an inactive array are spares,
    /// as md shows them before it runs), laid out as the kernel shows an array of `spec.level`.
    pub fn md(&mut self, name: &str, spec: &MdSpec, members: &[&str]) -> String {
        let u = if spec.array_state == "inactive" {
            Use::Spare
        } else {
            Use::Active
        };
        let roles: Vec<(&str, Use)> = members.iter().map(|m| (*m, u)).collect();
        self.md_with(name, spec, &roles)
    }

    /// An md array `name` whose members have the given uses: data members take slots 0, 1, ...
    /// in order; spares and faulty members show slot `none`, the journal slot `journal`.
    pub fn md_with(&mut self, name: &str, spec: &MdSpec, members: &[(&str, Use)]) -> String {
        let dir = self.dir.join("sys/devices/virtual/block").join(name);
        self.block_dir(name, dir.clone(), None);
        let md = dir.join("md");
        let level = spec.level.as_str();
        let active = spec.array_state != "inactive";
        let raid456 = active && matches!(level, "raid4" | "raid5" | "raid6");
        let redundant = active && (raid456 || matches!(level, "raid1" | "raid10"));
        // mdadm's defaults: left-symmetric (2) for raid5/6, near 2 copies (0x102) for raid10.
        let layout = if level == "raid10" { "258" } else { "2" };
        let files: &[(&str, &str)] = &[
            ("level", level),
            ("array_state", &spec.array_state),
            ("metadata_version", &spec.metadata_version),
            ("chunk_size", "524288"),
            ("layout", layout),
            ("component_size", "65536"),
            ("array_size", "default"),
            ("consistency_policy", if active { "resync" } else { "none" }),
            ("safe_mode_delay", "0.204"),
        ];
        for (f, v) in files {
            write(&md.join(f), v);
        }
        let data = members
            .iter()
            .filter(|(_, u)| matches!(u, Use::Active | Use::Rebuilding | Use::BadBlocks))
            .count();
        // A container's (inactive) members are all spares; raid_disks still counts them.
        let disks = if active { data } else { members.len() };
        write(&md.join("raid_disks"), &disks.to_string());
        write(&md.join("reshape_position"), &spec.reshape_position);
        if spec.zero_kernel_uuid {
            write(&md.join("uuid"), "00000000-0000-0000-0000-000000000000");
        } else if spec.kernel_uuid_file {
            write(&md.join("uuid"), &kernel_uuid(&spec.uuid));
        }
        if redundant {
            for (f, v) in [
                ("sync_action", spec.sync_action.as_str()),
                ("last_sync_action", "none"),
                ("sync_speed_min", "1000 (system)"),
                ("sync_speed_max", "200000 (system)"),
                ("sync_force_parallel", "0"),
                ("sync_completed", spec.sync_completed.as_str()),
                ("sync_speed", spec.sync_speed.as_str()),
                ("sync_min", "0"),
                ("sync_max", "max"),
                ("degraded", "0"),
                ("mismatch_cnt", "0"),
            ] {
                write(&md.join(f), v);
            }
            if self.sync_io_depth {
                write(&md.join("sync_io_depth"), "32 (system)");
            }
        }
        if raid456 {
            for (f, v) in [
                ("group_thread_cnt", "0"),
                ("stripe_cache_size", "256"),
                ("stripe_cache_active", "0"),
                ("preread_bypass_threshold", "1"),
                ("skip_copy", "0"),
                ("rmw_level", "1"),
                ("stripe_size", "4096"),
                ("ppl_write_hint", "0"),
            ] {
                write(&md.join(f), v);
            }
        }
        for &(m, u) in members {
            self.add_member(name, m, u);
        }
        let dev = self.dir.join("dev");
        if let Some(devname) = &spec.devname {
            link(&dev.join("md").join(devname), &dev.join(name));
        }
        link(
            &dev.join("disk/by-id")
                .join(format!("md-uuid-{}", spec.uuid)),
            &dev.join(name),
        );
        write(&dev.join(name), "");
        name.to_string()
    }

    /// Adds `member` to array `md` with use `u` (`mdadm --add`): data members take the next
    /// free slot (and an `rdN` link); spares and faulty members show slot `none`, the journal
    /// slot `journal`.
    pub fn add_member(&mut self, md: &str, member: &str, u: Use) {
        self.stack(md, member);
        let md_dir = self.device_dir(md).join("md");
        let dev = md_dir.join(format!("dev-{member}"));
        link(&dev.join("block"), &self.device_dir(member));
        let slot = match u {
            Use::Active | Use::Rebuilding | Use::BadBlocks => {
                let n = (0..)
                    .find(|n| fs::symlink_metadata(md_dir.join(format!("rd{n}"))).is_err())
                    .unwrap_or(0);
                link(&md_dir.join(format!("rd{n}")), &dev);
                n.to_string()
            }
            Use::Spare | Use::Faulty => "none".to_string(),
            Use::Journal => "journal".to_string(),
        };
        let state = match u {
            Use::Active => "in_sync",
            Use::Rebuilding | Use::Spare => "spare",
            Use::Faulty => "faulty",
            Use::Journal => "journal",
            Use::BadBlocks => "faulty,in_sync,blocked",
        };
        write(&dev.join("state"), state);
        write(&dev.join("slot"), &slot);
    }

    /// Reads an md attribute the way a test asserts on it (trimmed).
    pub fn read_md(&self, md: &str, attr: &str) -> String {
        fs::read_to_string(self.md_attr(md, attr))
            .unwrap()
            .trim()
            .to_string()
    }

    /// Sets an md attribute, as the kernel would show it.
    pub fn set_md(&self, md: &str, attr: &str, value: &str) {
        write(&self.md_attr(md, attr), value);
    }
}
