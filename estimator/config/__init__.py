"""The run configuration: schema, sections, cross-field rules, YAML loading, errors, presets."""
