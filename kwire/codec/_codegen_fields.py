"""What the code generator knows of one struct and its fields: the C types of its integers, the version
conditions, defaults, and the per-struct facts (``StructFacts``) that the reader, writer and class emitters
(``_codegen_read``, ``_codegen_write``, ``_codegen_classes``) all ask."""

#: The C type an integer field is kept in, the writer of its bytes, the unsigned type that writer takes, and
#: the range the C type holds (what the pure twin's _INT_RANGES accepts for the field's Kafka type).
C_INTS = {
    "int8": ("int8_t", "w_u8", "uint8_t", "-0x80", "0x7F"),
    "int16": ("int16_t", "w_be16", "uint16_t", "-0x8000", "0x7FFF"),
    "uint16": ("uint16_t", "w_be16", "uint16_t", "0", "0xFFFF"),
    "int32": ("int32_t", "w_be32", "uint32_t", "-0x80000000", "0x7FFFFFFF"),
    "int64": ("int64_t", "w_be64", "uint64_t", "INT64_MIN", "INT64_MAX"),
}
INT_WRITERS = {"int8": "w_int8", "int16": "w_int16", "uint16": "w_uint16", "int32": "w_int32", "int64": "w_int64"}
INT_READERS = {"int8": "r_int8", "int16": "r_int16", "uint16": "r_uint16", "int32": "r_int32", "int64": "r_int64"}


def range_cond(rng, outer):
    """C condition for ``version in rng``, given the caller already knows ``version in outer``."""
    if rng.empty or rng.hi < outer.lo or rng.lo > outer.hi:
        return "0"
    parts = []
    if rng.lo > outer.lo:
        parts.append(f"version >= {rng.lo}")
    if rng.hi < outer.hi:
        parts.append(f"version <= {rng.hi}")
    return " and ".join(parts) or "1"


def when(cond, body, indent, orelse=None):
    """Emit ``body`` (list of lines) under ``cond``, folding constant conditions."""
    pad = " " * indent
    if cond == "1":
        return [pad + line for line in body]
    if cond == "0":
        return [pad + line for line in orelse] if orelse else []
    out = [f"{pad}if {cond}:"] + [pad + "    " + line for line in body]
    if orelse:
        out += [f"{pad}else:"] + [pad + "    " + line for line in orelse]
    return out


def is_unboxed(field):
    """Whether a struct keeps ``field`` as a C integer (see ``class_def``)."""
    return not field.is_array and not field.is_struct and field.type in C_INTS


def store(field, obj):
    """The C expression of ``obj``'s slot that holds ``field``: an array's may hold EMPTY_ARRAY, an unboxed
    integer's is the C value, valid while its overflow bit is clear."""
    return f"{obj}.c_{field.attr}" if is_unboxed(field) else f"{obj}.v_{field.attr}"


def shared_bytes(fields):
    """The untagged, single bytes fields of a struct: what an element can share with the one before it."""
    return [f for f in fields if f.tag is None and not f.is_array and not f.is_struct and f.type in ("bytes", "records")]


def py_default(field):
    d = field.default
    return "[]" if isinstance(d, list) else repr(d)


def default_test(field, expr):
    """C/Python expression that is true when ``expr`` holds the field's default."""
    d = field.default
    if isinstance(d, list):
        return f"is_empty_list({expr})"
    if d is None:
        return f"{expr} is None"
    return f"({expr} is not None and {expr} == {d!r})"


def piecewise(values, outer):
    """A C expression of ``version`` taking values[v] for v in outer."""
    versions = list(range(outer.lo, min(outer.hi, max(values)) + 1))
    if len({values[v] for v in versions}) == 1:
        return str(values[versions[0]])
    expr = str(values[versions[-1]])
    for v in reversed(versions[:-1]):
        if values[v] != values[v + 1]:
            expr = f"({values[v]} if version <= {v} else {expr})"
    return expr


class StructFacts:
    """One struct of one message, as the emitters see it."""

    def __init__(self, gen, msg, cls, fields, rng):
        self.gen = gen
        self.msg = msg
        self.cls = cls
        self.fields = fields
        self.rng = rng  # versions in which this struct can appear
        # The message's own struct reads inside one try and keeps the failing
        # field in a local.  An element struct (an array's or a field's) is
        # read thousands of times per message, and a try costs each call a
        # save of the thread's exception state (a sixth of decoding 1000
        # group members), so it only notes the field it is reading in
        # ``r.field``, and the loop or the call that read it names the field.
        self.root = cls == msg.class_name
        self.fvar = "f" if self.root else "r.field"
        # An element struct with bytes fields is handed the array's previous
        # element, whose equal bytes it keeps instead of copying (r_bytes).
        self.takes_prev = not self.root and shared_bytes(fields)
        self.flex_cond = range_cond(msg.flexible, rng)
        self.untagged = [f for f in fields if not (f.tag is not None)]
        # An unboxed integer field's bit in ``overflowed``: set while the field holds what its C slot cannot
        # (anything but an exact int in range), which ``overflow`` then keeps by field name.
        self.bits = {f.attr: 1 << i for i, f in enumerate(f for f in fields if is_unboxed(f))}
        assert len(self.bits) <= 32, cls
        slots = {"overflow", "overflowed"} | {p + f.attr for f in fields for p in ("c_", "v_")}
        assert not slots & {f.attr for f in fields}, cls  # a field's property would shadow a slot
        self.ovf_type = next(t for t, n in (("uint8_t", 8), ("uint16_t", 16), ("uint32_t", 32)) if len(self.bits) <= n)
        self.tagged = sorted((f for f in fields if f.tag is not None), key=lambda f: f.tag)

    # -- helpers ------------------------------------------------------------

    def _compact(self, f):
        if f.flexible_override is not None:
            return range_cond(f.flexible_override.intersect(self.msg.flexible), self.rng)
        return "flex"

    def _nullable(self, f):
        return range_cond(f.nullable, self.rng)

    def _min_size(self, f):
        sizes = {}
        for v in range(self.rng.lo, min(self.rng.hi, self.msg.valid.hi) + 1):
            sizes[v] = self.gen.schema.element_min_size(f, v, v in self.msg.flexible)
        return piecewise(sizes, self.rng)

    @staticmethod
    def _chained(f):
        """Whether ``f`` is an array whose elements are each handed the one before (see ``takes_prev``)."""
        return f.is_array and f.is_struct and bool(shared_bytes(f.fields))

    def _elem_cls(self, f):
        return self.msg.struct_class_names.get(f.struct_name, f.struct_name)

    def _guarded(self, body, error, result):
        """The function body inside one try: an error raised anywhere in it gets
        the failing field's name (``f`` indexes ``_N_<struct>``) prepended."""
        return ["    try:"] + ["        " + line for line in body] + [
            f"    except {error} as e:",
            "        if f >= 0:",
            f"            e.prepend_path(_N_{self.cls}[f])",
            "        raise",
            f"    return {result}",
            "",
            "",
        ]

    def _value(self, f, obj):
        """A C expression of what reading ``obj.<field>`` in Python gives, without making an empty array's list
        (``default_test`` and is_empty_list take EMPTY_ARRAY as empty)."""
        if is_unboxed(f):
            return f"({obj}.overflow[{f.attr!r}] if {obj}.overflowed & {self.bits[f.attr]} else {obj}.c_{f.attr})"
        return f"{obj}.v_{f.attr}"

    def _is_default(self, f, obj):
        """A C condition: ``obj``'s ``f`` holds its default (an unboxed one compared in C unless overflowed)."""
        if is_unboxed(f):
            held = f"held_is({obj}.overflow, {f.attr!r}, {f.default!r})"
            bit = self.bits[f.attr]
            return f"({obj}.c_{f.attr} == {f.default!r} if not ({obj}.overflowed & {bit}) else {held})"
        return default_test(f, self._value(f, obj))

    def _set_default(self, f):
        """The line that gives a decoded instance ``f``'s default (a new instance's flags are all clear)."""
        if f.is_array:
            return f"o.v_{f.attr} = EMPTY_ARRAY"
        return f"{store(f, 'o')} = {py_default(f)}"
