//! The properties the fuzz targets check (in progress).
