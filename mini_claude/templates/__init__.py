"""Prompt texts shipped as package data."""
