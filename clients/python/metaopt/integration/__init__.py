"""Integrations of metaopt with other optimization libraries.

- :mod:`metaopt.integration.optuna`: an Optuna sampler backed by a metaopt study.
"""
