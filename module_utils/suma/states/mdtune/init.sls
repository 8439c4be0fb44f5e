{#- mdtune formula: tunes the md RAID arrays of a minion from the pillar `mdtune:` that the
    SUSE Manager / Uyuni form writes (see map.jinja). Needs the mdtune execution and state
    modules in salt://_modules and salt://_states (the formula package installs them there); a
    highstate syncs them, `state.apply mdtune` alone needs `saltutil.sync_all` first. -#}
{%- from "mdtune/map.jinja" import mdtune with context %}

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
{%- for key, value in mdtune.args | dictsort %}
    - {{ key }}: {{ value | json }}
{%- endfor %}
{%- if mdtune.deploy.enabled %}
    - require:
      - file: mdtune-binary
{%- endif %}
