"""Messages with every array filled, built from the schema tables alone, for tests that must reach every
struct of every message (the decode memory bound, the twins' error paths at every depth)."""

from kwire.codec import _schema


def filled(codec, msg: "_schema.Message", version: int, elements: int, nested: int):
    """An instance of ``msg`` at ``version`` whose top-level arrays hold ``elements`` entries and whose nested
    arrays hold ``nested`` (two levels; deeper arrays are left empty).  Elements are minimal: integers from
    1000 up (outside CPython's small-int cache), strings empty."""

    def fill(fields, depth):
        values = {}
        for f in fields:
            if version not in f.versions or f.tag is not None:
                continue
            if f.is_array and depth < 2:
                count = elements if depth == 0 else nested
                if f.is_struct:
                    sub = getattr(codec, msg.struct_class_names.get(f.struct_name, f.struct_name))
                    values[f.attr] = [sub(**fill(f.fields, depth + 1)) for _ in range(count)]
                elif f.element_type in ("int16", "int32", "int64"):
                    values[f.attr] = [1000 + i for i in range(count)]
                elif f.element_type == "string":
                    values[f.attr] = [""] * count
            elif f.is_struct and not f.is_array:
                sub = getattr(codec, msg.struct_class_names.get(f.struct_name, f.struct_name))
                values[f.attr] = sub(**fill(f.fields, depth + 1))
            elif not f.is_array and f.type in ("int16", "int32", "int64"):
                values[f.attr] = 1000
        return values

    return getattr(codec, msg.class_name)(**fill(msg.fields, 0))
