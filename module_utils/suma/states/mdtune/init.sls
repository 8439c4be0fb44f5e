{#- mdtune formula: tunes the md RAID arrays of a minion from the pillar `mdtune:` that the
    SUSE Manager / Uyuni form writes (see map.jinja). Needs the mdtune execution and state
    modules in salt://_modules and salt://_states (the formula package installs them there); a
    highstate syncs them, `state.apply mdtune` alone needs `saltutil.sync_all` first (salt-ssh
    ships them with every run). The desired state is the pillar, translated on the minion
    (`from_pillar: true`): the same SLS for every minion, valid for an empty pillar, and the
    same under salt-ssh, whose state run carries the master's pillar to the target. -#}
{%- from "mdtune/map.jinja" import mdtune with context %}

{%- if mdtune.install.enabled %}

mdtune-package:
  pkg.installed:
    - name: {{ mdtune.install.name | json }}
{%- endif %}

{%- if mdtune.deploy.enabled %}

mdtune-binary:
  file.managed:
    - name: {{ mdtune.deploy.target | json }}
    - source: {{ mdtune.deploy.source | json }}
    {%- if mdtune.deploy.source_hash %}
    - source_hash: {{ mdtune.deploy.source_hash | json }}
    {%- endif %}
    - mode: '0755'
    - makedirs: true
{%- endif %}

mdtune-tuned:
  mdtune.managed:
    - from_pillar: true
{%- if mdtune.install.enabled and not mdtune.deploy.enabled and not mdtune.binary %}
    - binary: {{ mdtune.install.binary | json }}
{%- endif %}
{%- if mdtune.install.enabled or mdtune.deploy.enabled %}
    - require:
  {%- if mdtune.install.enabled %}
      - pkg: mdtune-package
  {%- endif %}
  {%- if mdtune.deploy.enabled %}
      - file: mdtune-binary
  {%- endif %}
{%- endif %}

{%- if mdtune.metrics.enabled %}

{#- Runs on the live system only (metadata.yml's live_state_ids): a timer is started there. The
    state keeps the ID it had when the timer was mdtune-metrics.timer, which mdtune-tick.timer
    replaces. #}
mdtune-metrics:
  service.running:
    - name: mdtune-tick.timer
    - enable: true
  {%- if mdtune.install.enabled %}
    - require:
      - pkg: mdtune-package
  {%- endif %}
{%- endif %}
