"""Build of the optional C extension ``analyzer.ingest._kineto_scan`` (everything else is in
pyproject.toml). ``optional=True``: without a C compiler the install still succeeds and the ingest
uses its msgspec path (``analyzer.ingest.native.AVAILABLE`` is False then)."""

from setuptools import Extension, setup

setup(ext_modules=[Extension("analyzer.ingest._kineto_scan", ["analyzer/ingest/_kineto_scan.c"],
                             extra_compile_args=["-O3", "-std=c11", "-Wall", "-Wextra"], optional=True)])
