mod contract;
mod model;
mod sqlite;
