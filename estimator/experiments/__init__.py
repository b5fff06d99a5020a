"""Experiments above the model: seed runs, reconstruction, ablations, calibration, measured rows and their accuracy."""
