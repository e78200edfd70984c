"""The code generator's reader emitter: the ``_r_<struct>`` function of each struct (bytes to an object,
with the version checks spelled out as C comparisons)."""

if __package__:
    from ._codegen_fields import INT_READERS, StructFacts, py_default, range_cond, shared_bytes, store, when
else:  # loaded as a file by setup.py or run as a script, before kwire can be imported
    from _codegen_fields import INT_READERS, StructFacts, py_default, range_cond, shared_bytes, store, when  # type: ignore[no-redef]


class ReadEmitter(StructFacts):
    def _read_scalar(self, f, t):
        if t == "string":
            return f"r_string(r, {self._compact(f)}, {self._nullable(f)})"
        if t in ("bytes", "records"):
            if self.takes_prev and f in shared_bytes(self.fields):
                # Borrowed: the previous element, which the array's list holds, keeps it alive.
                before = f"<PyObject*>(<{self.cls}>prev).v_{f.attr} if prev is not None else NULL"
                return f"r_bytes(r, {self._compact(f)}, {self._nullable(f)}, {before})"
            return f"r_bytes(r, {self._compact(f)}, {self._nullable(f)})"
        if t == "bool":
            return "r_bool(r)"
        if t == "uuid":
            return "r_uuid(r)"
        if t == "float64":
            return "r_float64(r)"
        return f"{INT_READERS[t]}(r)"

    def _element_failed(self, f, idx):
        """Handler lines naming the field an element struct of ``f`` failed in
        (it left it in ``r.field``), then, in an element struct, putting back
        this struct's own field for whoever called it."""
        lines = ["if r.field >= 0:", f"    e.prepend_path(_N_{self._elem_cls(f)}[r.field])"]
        return lines if self.root else lines + [f"r.field = {idx}"]

    def _read_value(self, f, target, idx):
        """Lines that read ``f`` (field ``idx``) into ``target``."""
        if f.is_array:
            chained = self._chained(f)
            if f.is_struct:
                elem = f"_r_{self._elem_cls(f)}(r, version{', last_item' if chained else ''})"
            else:
                elem = self._read_scalar(f, f.element_type)
            named = ["        " + line for line in self._element_failed(f, idx)] if f.is_struct else []
            return [
                f"n = r_count(r, {self._compact(f)}, {self._nullable(f)}, {self._min_size(f)})",
                "if n == -1:",
                f"    {target} = None",
                "elif n == 0:",
                f"    {target} = EMPTY_ARRAY",
                "else:",
                "    # Sized once (r_count has checked n against the bytes left); a slot",
                "    # an error leaves empty is NULL, which the list's dealloc skips.",
                "    lst = PyList_New(n)",
                *(["    last_item = None"] if chained else []),
                "    try:",
                "        for i in range(n):",
                # A chained element is read straight into last_item: one reference less to take and drop.
                f"            {'last_item' if chained else 'item'} = {elem}",
                f"            Py_INCREF({'last_item' if chained else 'item'})",
                f"            PyList_SET_ITEM(lst, i, {'last_item' if chained else 'item'})",
                "    except DecodeError as e:",
                *named,
                "        e.prepend_path(i)",
                "        raise",
                f"    {target} = lst",
            ]
        if f.is_struct:
            call = f"_r_{self._elem_cls(f)}(r, version{', None' if shared_bytes(f.fields) else ''})"
            read = ["try:", f"    {target} = {call}", "except DecodeError as e:",
                    *("    " + line for line in self._element_failed(f, idx)), "    raise"]
            nullable = self._nullable(f)
            if nullable == "0":
                return read
            # Kafka marks a nullable struct with an int8: -1 null, 1 present.
            return [f"if ({nullable}) and r_int8(r) < 0:", f"    {target} = None", "else:",
                    *("    " + line for line in read)]
        return [f"{target} = {self._read_scalar(f, f.type)}"]

    def read_function(self):
        names = tuple(f.attr for f in self.fields)
        L = [
            f"cdef tuple _N_{self.cls} = {names!r}",
            "",
            "",
            f"cdef object _r_{self.cls}(Reader* r, int version{', object prev' if self.takes_prev else ''}):",
            f"    cdef {self.cls} o = {self.cls}.__new__({self.cls})",
            *(["    cdef int f = -1"] if self.root else []),
            "    cdef Py_ssize_t n, i",
            "    cdef list lst",
            "    cdef object item",
            # The element an array of ``f`` read last, handed to the next one
            # (its own name: ``prev`` is this struct's parameter).
            *(["    cdef object last_item"] if any(self._chained(f) for f in self.fields) else []),
            f"    cdef bint flex = {self.flex_cond}",
        ]
        if self.tagged:
            L += ["    cdef Py_ssize_t count, j, end, saved_end",
                  "    cdef int64_t last", "    cdef uint32_t tag, size", "    cdef dict unknown"]
        body = []
        for idx, f in enumerate(self.fields):
            present = range_cond(f.versions, self.rng)
            if f.tag is not None:
                if present == "1" and not f.has_explicit_default and py_default(f) == "None":
                    continue
                # Tagged fields start at their default; the tag section may set them.
                body.append(self._set_default(f))
                continue
            read = [f"{self.fvar} = {idx}"] + self._read_value(f, store(f, "o"), idx)
            default = [self._set_default(f)] if py_default(f) != "None" else None
            body += when(present, read, 0, default)
        body.append(f"{self.fvar} = -1")
        if self.tagged:
            tags = [
                "count = r_tag_count(r)",
                "last = -1",
                "unknown = None",
                "for j in range(count):",
                "    r_tag_header(r, &last, &tag, &size)",
                "    end = r.pos + size",
            ]
            first = True
            for f in self.tagged:
                idx = self.fields.index(f)
                cond = range_cond(f.tagged.intersect(f.versions), self.rng)
                test = f"tag == {f.tag}" + ("" if cond == "1" else f" and {cond}")
                tags.append(f"    {'if' if first else 'elif'} {test}:")
                first = False
                inner = [f"{self.fvar} = {idx}", "saved_end = r.end", "r.end = end"]
                inner += self._read_value(f, store(f, "o"), idx)
                inner += ["r.end = saved_end", f"{self.fvar} = -1", f"r_check_tag_consumed(r, end, tag, {f.attr!r})"]
                tags += ["        " + line for line in inner]
            tags += [
                "    else:",
                "        if unknown is None:",
                "            unknown = {}",
                "        unknown[tag] = PyBytes_FromStringAndSize(<const char*>(r.p + r.pos), size)",
                "        r.pos += size",
                "o.unknown_tagged_fields = unknown",
            ]
            body += when("flex", tags, 0)
        else:
            # A new instance's unknown_tagged_fields is None already: an empty section (nearly all) stores nothing.
            body += when("flex", ["if not r_no_tags(r):", "    o.unknown_tagged_fields = _r_unknown_tags(r)"], 0)
        if not self.root:
            return L + ["    r.field = -1"] + ["    " + line for line in body] + ["    return o", "", ""]
        return L + self._guarded(body, "DecodeError", "o")
