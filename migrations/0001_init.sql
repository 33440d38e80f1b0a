-- placeholder replaced by the index work; keeps the build whole
CREATE TABLE IF NOT EXISTS folders (id INTEGER PRIMARY KEY);
