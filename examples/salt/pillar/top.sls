base:
  '*':
    - hana_raid
