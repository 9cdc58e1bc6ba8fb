"""Generators: the one stage of the request pipeline that differs (speculator/pipeline.py).

`local` runs the models in this process; the remote generators are in
speculator/backends (llama-server, OpenAI-compatible servers).
"""
