{#- mdtune formula: tunes the md RAID arrays of a minion from the pillar `mdtune:` that the
    SUSE Manager / Uyuni form writes (see map.jinja for the translation). Needs the mdtune
    execution and state modules (salt://_modules/mdtune.py, salt://_states/mdtune.py); a
    highstate syncs them, `state.apply mdtune` alone needs `saltutil.sync_all` first. -#}
{%- from "mdtune/map.jinja" import mdtune with context %}

{%- if mdtune.deploy.get('enabled') %}

mdtune-binary:
  file.managed:
    - name: {{ mdtune.deploy.get('target') | json }}
    - source: {{ mdtune.deploy.get('source') | json }}
    {%- if mdtune.deploy.get('source_hash') %}
    - source_hash: {{ mdtune.deploy.get('source_hash') | json }}
    {%- endif %}
    - mode: '0755'
    - makedirs: true
{%- endif %}

mdtune-tuned:
  mdtune.managed:
{%- for key, value in mdtune.args | dictsort %}
    - {{ key }}: {{ value | json }}
{%- endfor %}
{%- if mdtune.deploy.get('enabled') %}
    - require:
      - file: mdtune-binary
{%- endif %}
