"""Hypothesis strategies that build random messages from kwire's schema tables.

Values are generated as plain trees (dicts and lists) so the very same
message can be instantiated in both implementations and compared.
"""

from hypothesis import strategies as st

from kwire.codec import _schema

_INTS = {
    "int8": (-(1 << 7), (1 << 7) - 1),
    "int16": (-(1 << 15), (1 << 15) - 1),
    "uint16": (0, (1 << 16) - 1),
    "int32": (-(1 << 31), (1 << 31) - 1),
    "int64": (-(1 << 63), (1 << 63) - 1),
}

_text = st.text(st.characters(exclude_categories=("Cs",)), max_size=12)
_bytes = st.binary(max_size=24)


def _scalar(t):
    if t == "string":
        return _text
    if t in ("bytes", "records"):
        return _bytes
    if t == "bool":
        return st.booleans()
    if t == "uuid":
        return st.binary(min_size=16, max_size=16)
    if t == "float64":
        return st.floats(allow_nan=False)
    lo, hi = _INTS[t]
    return st.one_of(st.integers(lo, hi), st.sampled_from([lo, hi, 0, -1]).filter(lambda v: lo <= v <= hi))


def _value(field, version, flexible):
    if field.is_struct:
        elem = struct_tree(field.fields, version, flexible)
    else:
        elem = _scalar(field.element_type)
    v = st.lists(elem, max_size=4) if field.is_array else elem
    if version in field.nullable:
        v = st.one_of(st.none(), v)
    return v


def _unknown_tags(fields):
    known = {f.tag for f in fields if f.tag is not None}
    return st.one_of(
        st.none(),
        st.dictionaries(st.integers(0, 300).filter(lambda t: t not in known), _bytes, max_size=3),
    )


def struct_tree(fields, version, flexible):
    """A dict tree of field values valid at ``version``; absent fields are left out."""
    parts = {}
    for f in fields:
        if version in f.versions:
            parts[f.attr] = _value(f, version, flexible)
    if flexible:
        parts["unknown_tagged_fields"] = _unknown_tags(fields)
    return st.fixed_dictionaries(parts).map(lambda d: ("struct", fields, d))


def message_tree(msg, version):
    return struct_tree(msg.fields, version, version in msg.flexible)


def build(codec, msg, tree):
    """Instantiate a tree in one codec module."""
    classes = {id(fields[0]): getattr(codec, cname) for cname, _k, fields, _r in msg.structs()}
    classes[id(msg.fields[0])] = getattr(codec, msg.class_name)

    def make(node):
        if isinstance(node, tuple) and node and node[0] == "struct":
            _tag, fields, values = node
            kwargs = {k: make(v) for k, v in values.items()}
            if kwargs.get("unknown_tagged_fields") is None:
                kwargs.pop("unknown_tagged_fields", None)
            return classes[id(fields[0])](**kwargs)
        if isinstance(node, list):
            return [make(x) for x in node]
        return node

    return make(tree)


def all_message_versions():
    out = []
    for msg in _schema.ALL_MESSAGES:
        for v in range(msg.valid.lo, msg.valid.hi + 1):
            out.append((msg, v))
    return out
