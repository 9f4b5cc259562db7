"""One module per coding CLI a runner can drive, behind ``base.Adapter``."""
