"""Registered problems (installed as `t2t_lite.problems`).

Explicit discovery: importing this package registers every problem module
listed here.
"""
