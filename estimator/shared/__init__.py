"""What memory/, perf/ and search/ share: scalar-or-array helpers and the cross-config stores."""
