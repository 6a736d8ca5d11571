"""The error a benchmark loader raises for data it cannot use, in a leaf module of the package (the base
builder, the layouts and the loaders all raise it)."""


class DataError(ValueError):
    """The benchmark files are missing, truncated or not what upstream publishes."""
