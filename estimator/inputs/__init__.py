"""The model's inputs: hardware, overlays, framework profiles, parameter counts, derived degrees, pipeline split."""
