"""What the drop-in's generators share."""


def write_if_changed(path, text):
    """Writes `text` to `path` unless it is there already, so that what
    depends on the file is not rebuilt for nothing."""
    try:
        with open(path) as f:
            if f.read() == text:
                return
    except OSError:
        pass
    with open(path, "w") as f:
        f.write(text)
