"""The dashboard surface: one payload of engine queries and one self-contained page that draws it.

``payload`` computes every panel from the engine; ``layout`` samples and places the graph panel's
marks; ``page`` assembles ``page.html`` and ``dashboard.js`` (with the payload embedded on
request); ``export`` writes both files. Nothing here is imported by the engine (layer 10).
"""
