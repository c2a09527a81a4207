"""The HTTP face of the bureau (aiohttp). Handlers call domain modules; nothing in the
domain imports from here."""
