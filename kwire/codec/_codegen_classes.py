"""The code generator's class emitter: the cdef class of each struct (slots, properties, setters,
pickling) and the encode/decode methods of each message."""

if __package__:
    from ._codegen_fields import C_INTS, StructFacts, is_unboxed, py_default
else:  # loaded as a file by setup.py or run as a script, before kwire can be imported
    from _codegen_fields import C_INTS, StructFacts, is_unboxed, py_default  # type: ignore[no-redef]

# First allocation of an encode's Writer: a message body fits 128 bytes unless
# it carries arrays, which then double the buffer a few times; consumer-protocol
# data (Subscription, Assignment, userData) start smaller.
BODY_CAPACITY = 128
VERSIONED_DATA_CAPACITY = 64
#: Dead instances each class keeps for reuse.  Sized for a message's arrays,
#: not for one object: decoding 1000 group members after the previous 1000
#: were freed takes every one from the list instead of the allocator (64 left
#: 936 to malloc and made decode ~10% slower).  At most ~64 KB per class.
FREELIST = 1024

class ClassEmitter(StructFacts):
    def class_def(self, nested=()):
        attrs = [f.attr for f in self.fields]
        L = [f"@cython.freelist({FREELIST})"]
        if all(not f.is_array and not f.is_struct for f in self.fields):
            # Every field of this struct holds a str, bytes, int or bool, so its
            # instances cannot be part of a reference cycle.  Leaving them out of
            # the cyclic GC matters: decoding 1000 group members otherwise
            # triggers collections that cost a third of the decode.
            L.append("@cython.no_gc")
        L.append(f"cdef class {self.cls}:")
        doc = f"Kafka's {self.msg.name}" + ("" if self.cls == self.msg.class_name else f" {self.cls}") + \
              f" (versions {self.rng!r})."
        L.append(f'    """{doc}"""')
        # Each field is a property over a private slot; properties keep the fields' order among the class's
        # descriptors (Cython lists explicit properties before `cdef public` ones).  An integer field is a C
        # value (``c_``): a decoded element then costs no int object per field.  Whatever else is assigned
        # to it (a bool, an int subclass, a value out of range, None) is kept as given in ``overflow``, so reads
        # and encode errors stay those of the pure twin.  Arrays may hold EMPTY_ARRAY, read as a new list.
        unboxed = [f for f in self.fields if is_unboxed(f)]
        if unboxed:
            L.append("    cdef dict overflow")
        L += [f"    cdef object v_{f.attr}" for f in self.fields if not is_unboxed(f)]
        # Widest first: no padding between them.
        L += [f"    cdef {C_INTS[f.type][0]} c_{f.attr}"
              for f in sorted(unboxed, key=lambda f: -int("".join(filter(str.isdigit, f.type))))]
        if unboxed:
            L.append(f"    cdef {self.ovf_type} overflowed")
        L.append("    cdef public object unknown_tagged_fields")
        prefixed = self.cls == self.msg.class_name and self.msg.version_prefixed
        if prefixed:
            # The version a decoded instance was read at (None on one built by hand); not a field:
            # it takes no part in equality, and encode() writes the newest version unless told.
            L.append("    cdef public object version")
        L.append("")
        if self.cls == self.msg.class_name:
            m = self.msg
            L += [
                f"    kafka_name = {m.name!r}",
                f"    kind = {m.kind!r}",
                f"    api_key = {m.api_key!r}",
                f"    min_version = {m.valid.lo}",
                f"    max_version = {m.valid.hi}",
                f"    flexible_from = {None if m.flexible.empty else m.flexible.lo!r}",
            ]
            # Nested structs are reachable from their message class, as in Kafka.
            for cname, kname, _f, _r in m.structs():
                L.append(f"    {kname} = {cname}")
                if cname != kname:
                    L.append(f"    {cname} = {cname}")
            L.append("")
        for f in self.fields:
            L += self._property(f)
        params = ", ".join(f"{a}=_MISSING" for a in attrs)
        L.append(f"    def __init__(self, *, {params}, unknown_tagged_fields=None):")
        if unboxed:
            L += ["        self.overflowed = 0", "        self.overflow = None"]
        for f in self.fields:
            if is_unboxed(f):
                assert isinstance(f.default, int), (self.cls, f.attr)
                L += [f"        if {f.attr} is _MISSING:", f"            self.c_{f.attr} = {f.default!r}",
                      "        else:", f"            _s_{self.cls}_{f.attr}(self, {f.attr})"]
            elif f.is_array and py_default(f) == "[]":
                L.append(f"        self.v_{f.attr} = EMPTY_ARRAY if {f.attr} is _MISSING else {f.attr}")
            else:
                L.append(f"        self.v_{f.attr} = {py_default(f)} if {f.attr} is _MISSING else {f.attr}")
        L.append("        self.unknown_tagged_fields = unknown_tagged_fields")
        L.append("")
        L.append("    def __eq__(self, other):")
        L.append("        if type(other) is not type(self):")
        L.append("            return NotImplemented")
        L.append(f"        cdef {self.cls} o = <{self.cls}>other")
        for f in self.fields:
            a = f.attr
            if is_unboxed(f):
                # Two C values compare as their ints would; anything kept in overflow compares as itself.
                L += [f"        if (self.overflowed | o.overflowed) & {self.bits[a]}:",
                      f"            if not ({self._value(f, 'self')} == {self._value(f, 'o')}):",
                      "                return False",
                      f"        elif self.c_{a} != o.c_{a}:",
                      "            return False"]
            elif f.is_array:
                L += [f"        if not (as_read(self.v_{a}) == as_read(o.v_{a})):", "            return False"]
            else:
                L += [f"        if not (self.v_{a} == o.v_{a}):", "            return False"]
        L.append("        return (self.unknown_tagged_fields or None) == (o.unknown_tagged_fields or None)")
        L.append("")
        L.append("    def __ne__(self, other):")
        L.append("        eq = self.__eq__(other)")
        L.append("        return eq if eq is NotImplemented else not eq")
        L.append("")
        L.append("    __hash__ = None")
        L.append("")
        L.append("    def __delattr__(self, name):")
        L.append("        _refuse_deletion(self, name)")
        L.append("")
        L.append("    def __repr__(self):")
        L.append("        parts = [" + ", ".join(f"f'{a}={{self.{a}!r}}'" for a in attrs) + "]")
        L.append("        if self.unknown_tagged_fields:")
        L.append("            parts.append(f'unknown_tagged_fields={self.unknown_tagged_fields!r}')")
        L.append(f"        return '{self.cls}(' + ', '.join(parts) + ')'")
        L.append("")
        L.append("    def __reduce__(self):")
        version = ", 'version': self.version" if prefixed else ""
        L.append("        return (_rebuild, (type(self), {" + ", ".join(f"{a!r}: self.{a}" for a in attrs) +
                 f", 'unknown_tagged_fields': self.unknown_tagged_fields{version}}}))")
        L.append("")
        if self.cls == self.msg.class_name:
            L += self._message_methods()
        L.append("")
        return L

    def _property(self, f):
        a = f.attr
        if is_unboxed(f):
            get = [f"        if self.overflowed & {self.bits[a]}:", f"            return self.overflow[{a!r}]",
                   f"        return self.c_{a}"]
            put = f"_s_{self.cls}_{a}(self, v)"
        elif f.is_array:
            # The list is made on first read and kept, so changing it in place changes the field.
            get = [f"        if self.v_{a} is EMPTY_ARRAY:", f"            self.v_{a} = []",
                   f"        return self.v_{a}"]
            put = f"self.v_{a} = v"
        else:
            get = [f"        return self.v_{a}"]
            put = f"self.v_{a} = v"
        # No __del__: the class's __delattr__ refuses every deletion, as the pure twin's does.
        return [
            f"    property {a}:",
            "        def __get__(self):", *("    " + line for line in get),
            "        def __set__(self, v):", f"            {put}", ""]

    def setters(self):
        """The setter of each unboxed field: the C slot for an exact int in range, ``overflow`` for anything else."""
        L = []
        for f in self.fields:
            if not is_unboxed(f):
                continue
            a, bit = f.attr, self.bits[f.attr]
            ctype, _w, _u, lo, hi = C_INTS[f.type]
            L += [
                f"cdef int _s_{self.cls}_{a}({self.cls} self, object v) except -1:",
                "    cdef int64_t c",
                f"    if int_fits(v, {lo}, {hi}, &c):",
                f"        self.c_{a} = <{ctype}>c",
                f"        if self.overflowed & {bit}:",
                f"            self.overflowed ^= {bit}",
                f"            self.overflow = over_drop(self.overflow, {a!r})",
                "    else:",
                f"        self.overflow = over_keep(self.overflow, {a!r}, v)",
                f"        self.overflowed |= {bit}",
                "    return 0",
                "",
                "",
            ]
        return L

    def _write_and_return(self, capacity, before_body):
        """The rest of an ``encode``: a Writer of ``capacity`` bytes, the lines
        ``before_body``, the body, and the Writer freed on every exit."""
        return [
            "        cdef Writer w",
            f"        w_init(&w, {capacity})",
            "        try:",
            *before_body,
            f"            _w_{self.cls}(&w, self, version)",
            "            return w_bytes(&w)",
            "        finally:",
            "            w_free(&w)",
        ]

    def _message_methods(self):
        m = self.msg
        cls = self.cls
        lo, hi = m.valid.lo, m.valid.hi
        chk = f"check_version(version, {lo}, {hi}, {cls!r}, {repr(m.valid)!r})"
        # What decode and decode_prefix share: everything up to the decoded struct.
        read_body = [
            f"        {chk}",
            "        cdef Reader r",
            "        keep = r_open_views(&r, data, views)",
            "        if max_elements is not None:",
            "            r_set_limit(&r, max_elements)",
            f"        o = _r_{cls}(&r, version)",
        ]
        if not m.version_prefixed:
            return [
                "    def encode(self, version):",
                '        """The message body at ``version`` (no size prefix, no header)."""',
                f"        {chk}",
                *self._write_and_return(BODY_CAPACITY, []),
                "",
                "    @classmethod",
                "    def decode(cls, data, version, *, max_elements=None, views=False):",
                '        """Decode a body written at ``version`` from any bytes-like object.',
                "",
                "        ``max_elements`` caps the array elements and tagged fields built in total",
                "        (LimitExceededError past it); None means no cap.  ``views``: bytes fields",
                '        are read-only memoryviews of ``data`` (of a copy unless it is bytes)."""',
                *read_body,
                "        r_finish(&r)",
                "        return o",
                "",
                "    @classmethod",
                "    def decode_prefix(cls, data, version, *, max_elements=None, views=False):",
                '        """``(message, end)``: decode from the start of ``data``, which may go on."""',
                *read_body,
                "        return o, r.pos",
            ]
        return [
            "    def encode(self, version=None):",
            '        """An int16 version, then the body (the newest version by default)."""',
            "        if version is None:",
            f"            version = {hi}",
            f"        {chk}",
            *self._write_and_return(VERSIONED_DATA_CAPACITY, ["            w_be16(&w, <uint16_t><int16_t>version)"]),
            "",
            "    @classmethod",
            "    def decode(cls, data, *, max_elements=None, views=False):",
            '        """Read the int16 version prefix, then that version\'s body (``max_elements`` and ``views`` as',
            '        for messages)."""',
            "        cdef Reader r",
            "        keep = r_open_views(&r, data, views)",
            "        if max_elements is not None:",
            "            r_set_limit(&r, max_elements)",
            "        cdef int16_t version = r_int16(&r)",
            "        if version < 0:",
            "            raise DecodeError(f'negative version {version}', 0)",
            "        # A newer writer may add fields at the end; like Java, read the",
            "        # newest layout we know and ignore what follows it.",
            f"        if version > {hi}:",
            f"            o = _r_{cls}(&r, {hi})",
            "        else:",
            f"            o = _r_{cls}(&r, version)",
            "            r_finish(&r)",
            f"        (<{cls}>o).version = version",
            "        return o",
        ]
