# Desired md tuning of the bundled demo host (examples/demo-host), in the shape of mdtune's
# input (the module contract): the hana_raid state passes every key to mdtune.managed.
mdtune:
  # Tune a copy of the demo host instead of this machine: cp -a examples/demo-host /tmp/mdtune-demo
  # Remove `root` (or set it to /) on a real host.
  root: /tmp/mdtune-demo
  # Where the mdtune binary is, when it is neither on PATH nor /usr/local/sbin/mdtune.
  # binary: /opt/mdtune/bin/mdtune

  # group_thread_cnt for every raid4/5/6 array below that sets none: from the hardware queues.
  thread_policy: auto
  # /proc/sys/dev/raid/speed_limit_max in KiB/s: let resyncs use fast NVMe.
  speed_limit_max: 500000
  arrays:
    # md0, raid5 over four 8-queue NVMe drives: auto gives 8 threads.
    - name: hana_data
      stripe_cache_size: 4096
      sync_speed_max: 500000
    # md1, raid10 (no raid5 threads: the thread policy skips it), resyncing: a higher floor.
    - name: hana_log
      sync_speed_min: 50000
    # md2, raid6 over dm-multipath: auto gives 16 threads.
    - name: archive
      stripe_cache_size: 8192
      skip_copy: true
    # md3, raid5 over single-queue SATA: auto gives 0, already in place.
    - name: scratch
  # true also keeps all this across reboots and re-assembly (udev rule, /etc/mdtune/); false
  # stops keeping it (removes what an earlier persist installed, keeps the live values); left
  # out, persistence is left as it is.
  persist: false
