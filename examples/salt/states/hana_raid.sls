{#- Tunes the md arrays of a SAP HANA host as the pillar `mdtune:` describes (see
    examples/salt/pillar/hana_raid.sls). Every pillar key passes through to the mdtune.managed
    state: the keys of the mdtune module contract plus `binary`. Needs the mdtune execution
    and state modules in salt://_modules and salt://_states. -#}
{%- set tuning = salt['pillar.get']('mdtune', {}) %}

md-raid-tuned:
  mdtune.managed:
{%- for key, value in tuning | dictsort %}
    - {{ key }}: {{ value | json }}
{%- endfor %}
