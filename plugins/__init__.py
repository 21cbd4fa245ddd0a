"""Built-in oodfs plugins, registered through the `oodfs` entry-point group like any third-party plugin."""
