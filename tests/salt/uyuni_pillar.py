"""
How Uyuni turns saved formula data into a minion's pillar, transcribed for the tests.

Written from reading uyuni-project/uyuni, susemanager-utils/susemanager-sls/modules/pillar/
suma_minion.py (load_formula_pillar: merge_formula_data, then adjust_empty_values); not a copy.
What it does:

- merge: walks the form layout. Groups and namespaces are merged recursively. Any other field,
  an edit-group included (taken whole, never merged item by item), takes its value from the
  system's data, else the group's, else the field's `$default`, else its `$placeholder`, else
  "" (scope "system", the default). Scope "group" skips the system's data; "readonly" takes the
  default only.
- adjust: walks the layout again. A field missing from the data becomes "". A dict-of-dicts
  edit-group (prototype of type group with a `$key`) becomes a dict whose every item is adjusted
  against the prototype (so a missing item field is "" too, never its `$default`); a list-of-
  dicts one a list likewise; anything else that is not a dict/list there becomes {} / [].
  An empty value takes `$ifEmpty` when the field has one, and is dropped when it is `$optional`.
"""


def _is_group(element):
    return element.get("$type", "text") in ("group", "hidden-group", "namespace")


def _fields(layout):
    for name, element in layout.items():
        if not name.startswith("$") and isinstance(element, dict):
            yield name, element


def _fallback(element):
    if "$default" in element:
        return element["$default"]
    return element.get("$placeholder", "")


def merge(layout, group_data, system_data, scope="system"):
    """The pillar from the group's and the system's saved data (merge_formula_data)."""
    pillar = {}
    for name, element in _fields(layout):
        own_scope = element.get("$scope", scope)
        if _is_group(element):
            value = merge(element, group_data.get(name, {}), system_data.get(name, {}), own_scope)
        elif own_scope == "system":
            value = system_data.get(name, group_data.get(name, _fallback(element)))
        elif own_scope == "group":
            value = group_data.get(name, _fallback(element))
        elif own_scope == "readonly":
            value = _fallback(element)
        else:
            value = None
        pillar[name] = value
    return pillar


def _edit_group_kind(element):
    prototype = element.get("$prototype")
    if not prototype:
        return None
    is_group = prototype.get("$type", "group") == "group"
    keyed = prototype.get("$key") is not None
    return {
        (False, False): "primitive-list",
        (True, False): "primitive-dict",
        (False, True): "list-of-dicts",
        (True, True): "dict-of-dicts",
    }[(keyed, is_group)]


def adjust(layout, data):
    """Empty values made explicit, edit-group items completed (adjust_empty_values)."""
    pillar = {}
    for name, element in _fields(layout):
        kind = element.get("$type", "text")
        value = data.get(name, "")
        if _is_group(element):
            value = adjust(element, data.get(name, {}))
        elif kind == "edit-group":
            prototype = element.get("$prototype")
            sub = _edit_group_kind(element)
            given = data.get(name)
            if sub == "dict-of-dicts":
                value = {}
                if isinstance(given, dict):
                    value = {key: adjust(prototype, item) for key, item in given.items()}
            elif sub == "list-of-dicts":
                value = []
                if isinstance(given, list):
                    value = [adjust(prototype, item) for item in given]
        if not value and "$ifEmpty" in element:
            value = element["$ifEmpty"]
        if value or not element.get("$optional"):
            pillar[name] = value
    return pillar


def pillar(layout, group_data=None, system_data=None):
    """The formula's pillar for a system: merge, then adjust (load_formula_pillar)."""
    return adjust(layout, merge(layout, group_data or {}, system_data or {}))
