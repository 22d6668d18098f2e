# parts.py compiled as it is (no C types): the boundary hook's Python without the interpreter's dispatch.
