"""The code generator's writer emitter: the ``_w_<struct>`` function of each struct (an object to bytes,
with the version checks spelled out as C comparisons)."""

if __package__:
    from ._codegen_fields import C_INTS, INT_WRITERS, StructFacts, is_unboxed, range_cond, when
else:  # loaded as a file by setup.py or run as a script, before kwire can be imported
    from _codegen_fields import C_INTS, INT_WRITERS, StructFacts, is_unboxed, range_cond, when  # type: ignore[no-redef]


class WriteEmitter(StructFacts):
    def _write_scalar(self, f, t, expr, w):
        if t == "string":
            return f"w_string({w}, {expr}, {self._compact(f)}, {self._nullable(f)})"
        if t in ("bytes", "records"):
            return f"w_bytes_value({w}, {expr}, {self._compact(f)}, {self._nullable(f)})"
        if t == "bool":
            return f"w_bool({w}, {expr})"
        if t == "uuid":
            return f"w_uuid({w}, {expr})"
        if t == "float64":
            return f"w_float64({w}, {expr})"
        return f"{INT_WRITERS[t]}({w}, {expr})"

    def _write_value(self, f, expr, w="w"):
        if is_unboxed(f):
            ctype, writer, utype, _lo, _hi = C_INTS[f.type]
            return [f"if o.overflowed & {self.bits[f.attr]}:",
                    f"    w_held({w}, o.overflow, {f.attr!r}, HELD_{f.type.upper()})",
                    "else:",
                    f"    {writer}({w}, <{utype}>o.c_{f.attr})"]
        if f.is_array:
            elem = (f"_w_{self._elem_cls(f)}({w}, item, version)" if f.is_struct
                    else self._write_scalar(f, f.element_type, "item", w))
            return [
                f"v = {expr}",
                "if v is None:",
                f"    w_null({w}, {self._nullable(f)}, {self._compact(f)}, 1)",
                "else:",
                "    lst = as_list(v)",
                "    n = len(lst)",
                f"    w_length({w}, n, {self._compact(f)}, 1)",
                "    i = 0",
                "    try:",
                "        for i in range(n):",
                "            item = lst[i]",
                f"            {elem}",
                "    except EncodeError as e:",
                "        e.prepend_path(i)",
                "        raise",
            ]
        if f.is_struct:
            write = f"_w_{self._elem_cls(f)}({w}, {expr}, version)"
            nullable = self._nullable(f)
            if nullable == "0":
                return [write]
            return [f"if ({nullable}) and {expr} is None:", f"    w_int8({w}, -1)", "else:",
                    f"    if {nullable}:", f"        w_int8({w}, 1)", "    " + write]
        return [self._write_scalar(f, f.type, expr, w)]

    def write_function(self):
        kname = self.cls
        L = [
            f"cdef int _w_{self.cls}(Writer* w, object obj, int version) except -1:",
            f"    if type(obj) is not {self.cls} and not isinstance(obj, {self.cls}):",
            f"        raise EncodeError(f\"expected {self.cls}, got {{type(obj).__name__}}\")",
            f"    cdef {self.cls} o = <{self.cls}>obj",
            "    cdef int f = -1",
            "    cdef Py_ssize_t n, i",
            "    cdef list lst",
            "    cdef object v, item",
            f"    cdef bint flex = {self.flex_cond}",
        ]
        if self.tagged:
            L += ["    cdef dict known", "    cdef Writer tw"]
            L += ["    tw.buf = NULL", "    tw.obj = NULL"]
        # Kafka's writers refuse a non-default value in a field the version
        # lacks, unless the field is ignorable; checked before any byte is written.
        for f in self.fields:
            absent = range_cond(f.versions, self.rng)
            if f.ignorable or absent == "1":
                continue
            cond = f"not ({absent})" if absent != "0" else "1"
            test = f"not {self._is_default(f, 'o')}"
            msg = (f"f\"{kname}.{f.attr} = {{o.{f.attr}!r}} cannot be written at this version "
                   f"(the field exists in versions {f.versions!r})\"")
            L += when(cond, [f"if {test}:", f"    raise UnsupportedVersionError({msg})"], 4)
        body = []
        for idx, f in enumerate(self.fields):
            if f.tag is not None:
                continue
            present = range_cond(f.versions, self.rng)
            body += when(present, [f"f = {idx}"] + self._write_value(f, self._value(f, "o")), 0)
        body.append("f = -1")
        if self.tagged:
            tags = ["known = {}"]
            for f in self.tagged:
                idx = self.fields.index(f)
                cond = range_cond(f.tagged.intersect(f.versions), self.rng)
                inner = [
                    f"if not {self._is_default(f, 'o')}:",
                    f"    f = {idx}",
                    "    w_init(&tw, 64)",
                    "    try:",
                ]
                inner += ["        " + line for line in self._write_value(f, self._value(f, "o"), "&tw")]
                inner += [f"        known[{f.tag}] = w_bytes(&tw)", "    finally:", "        w_free(&tw)", "    f = -1"]
                tags += when(cond, inner, 0)
            tags.append("w_tags(w, o.unknown_tagged_fields, known)")
            body += when("flex", tags, 0)
        else:
            body += when("flex", ["w_no_tags(w, o.unknown_tagged_fields)"], 0)
        return L + self._guarded(body, "EncodeError", "0")
