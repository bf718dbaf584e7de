"""What a storage folder's calls cost, for people to read: ``report.py`` reads the folder
(without its lock) into the core's sums (``core/stats/costs.py``), ``page.py`` is the page that
shows them. The command line's ``hdcontext stats``, the proxy's ``GET /`` and the editor's
savings view all show these."""
