# Top file of the example: every minion gets the md tuning of hana_raid.sls.
base:
  '*':
    - hana_raid
